"""Whole-environment jobs: the `run` and `parity` subcommands."""
