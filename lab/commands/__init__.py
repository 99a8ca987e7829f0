"""The workshop's commands, one module each with `register(subparsers)` (lab.cli lists them)."""
