"""What a result means: the verdict vocabulary, the case catalog, judging rules, expectations, results."""
