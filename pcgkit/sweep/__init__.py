"""The sweep (`bin/pcgkit sweep`): FlashInfer entry points traced under torch.compile(fullgraph=True) per arch, and the per-release trace-safety certificate.

specs.py (the spec table, pure) -> inputs.py (materialize CPU tensors) -> guard.py (no kernel may
load or run) -> engine.py (import, trace, per simulated arch) -> classify.py (outcome -> class, pure)
-> report.py (readiness table, pure). Data: entry_points.toml, public_threads.toml, signatures/.
The certificate (`--discover`, `--certificate`): discover.py reads every public callable and
registered op (values: discovery.py) -> unroll.py traces and patches site after site (rules:
unroll_rules.py) -> opjudge.py judges ops as ops -> certify.py assembles -> certificate.py
(table, release diff, Markdown; pure).
"""
