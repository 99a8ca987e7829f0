"""What a result means: judging rules (modes, fixmodes), expectations, results."""
