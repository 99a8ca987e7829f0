"""The sweep (`bin/pcgkit sweep`): FlashInfer entry points traced under torch.compile(fullgraph=True) per arch; the reader of the committed trace-safety certificates (their builder is the workshop's, lab/sweep/).

specs.py (the spec table, pure) -> inputs.py (materialize CPU tensors) -> guard.py (no kernel may
load or run) -> engine.py (import, trace, per simulated arch) -> classify.py (outcome -> class, pure)
-> report.py (readiness table, pure). Data: entry_points.toml, public_threads.toml (each release's signatures, for reviewing them: lab/sweep/signatures/).
The trace-safety certificate: certificate.py reads the committed ones (fixtures/certificates/: coverage,
table, release diff, the JIT-loader set triage and the advice read, the Markdown section; pure); the builder
(`bin/pcgkit lab certify`: discovery, derived inputs, unrolling, fake runs, op judging) is the workshop's,
lab/sweep/ (docs/reference/layout.md says why). setupsim.py (a wrapper's simulated set-up) serves both.
"""
