"""The sweep (`bin/pcgkit sweep`): FlashInfer entry points traced under torch.compile(fullgraph=True) per arch; the reader of the committed trace-safety certificates (their builder is the workshop's, lab/sweep/).

specs.py (the spec table) -> inputs.py (CPU tensors) -> guard.py (no kernel may load or run) -> engine.py (import,
trace, per simulated arch; setupsim.py, a wrapper's simulated set-up) -> classify.py -> report.py (the readiness
table). certificate.py reads the committed certificates (fixtures/certificates/; docs/reference/layout.md says why
the builder is the workshop's). Data: entry_points.toml, public_threads.toml (public threads' facts, with links).
"""
