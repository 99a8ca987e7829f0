"""The version matrix: cells (sglang / flashinfer-python / torch / python) planned as data, run in
one virtual environment each, merged into upstream-ready reports, and bisected along one axis.

plan.py is pure; runner.py runs the cells through a backend (backends/); outcome.py is a cell's result on
disk; locks.py and torchbuild.py lock a cell. Rendering lives in pcgkit.report.
"""
