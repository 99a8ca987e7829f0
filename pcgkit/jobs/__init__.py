"""Whole-environment jobs: `pcgkit run` and `pcgkit parity`."""
