"""Triage evaluation: the labelled corpora scored against `pcgkit triage` (corpus) and the realistic damage a pasted
log takes (degrade); read by tests/test_triage*.py and benchmarks/bench_triage.py, never by triage itself."""
