"""The version matrix: cells (sglang / flashinfer-python / torch / python) planned as data, run in
one virtual environment each, merged into upstream-ready reports, and bisected along one axis.

plan.py and pins.py are pure (plus the explicit refresh download, `bin/pcgkit lab pins`); runner.py runs the cells
through a backend (backends/: a uv venv or a container each, the edge that builds environments and
runs the cases in them; backends/loop.py is the one cell loop they all go through); outcome.py is a
cell's result on disk; locks.py and torchbuild.py plan a cell's lock and its CPU-torch variant (uv at
the edge). Rendering lives in pcgkit.report.
"""
