"""The sweep (`bin/pcgkit sweep`): every public FlashInfer entry point traced under torch.compile(fullgraph=True) per arch.

specs.py (the spec table, pure) -> inputs.py (materialize CPU tensors) -> guard.py (no kernel may
load or run) -> engine.py (import, trace, per simulated arch) -> classify.py (outcome -> class, pure)
-> report.py (readiness table, pure). Data: entry_points.toml, public_threads.toml, signatures/.
"""
