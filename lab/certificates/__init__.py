"""Re-make the committed trace-safety certificates (`bin/pcgkit lab certificates`): the recipe read and every
release's environment and commands planned as data (plan.py, pure), run at the edge (run.py), each command's own
CPU time recorded inside the release's interpreter (child.py)."""
