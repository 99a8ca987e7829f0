"""The top floor: every command's parser and handler, one module per command (pcgkit.cli lists them).

A command module reads the arguments, asks the stage packages below for values, and hands the
catalog's cases, the chosen backend and the writers down to them; no stage imports a command.
"""
