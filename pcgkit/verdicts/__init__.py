"""What a result means: the case catalog, judging rules (modes, fixmodes), expectations, results."""
