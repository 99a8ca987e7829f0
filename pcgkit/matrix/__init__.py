"""The version matrix: cells (sglang / flashinfer-python / torch / python) planned as data, run in
one virtual environment each, merged into upstream-ready reports, and bisected along one axis.

plan.py and pins.py are pure (plus the explicit `--refresh-pins` download); backend_venv.py is the
edge that builds environments and runs `pcgkit run` in them; report/junit_merge/dashboard render.
"""
