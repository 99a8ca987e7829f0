"""The sweep (`bin/pcgkit sweep`): FlashInfer entry points traced under torch.compile(fullgraph=True) per arch, and the per-release trace-safety certificate.

specs.py (the spec table, pure) -> inputs.py (materialize CPU tensors) -> guard.py (no kernel may
load or run) -> engine.py (import, trace, per simulated arch) -> classify.py (outcome -> class, pure)
-> report.py (readiness table, pure). Data: entry_points.toml, public_threads.toml, signatures/.
The certificate (`--discover`, `--certificate`): discover.py reads every public callable and
registered op (values: discovery.py); the workshop's `bin/pcgkit lab certificate-inputs`
(lab/sweep/) derives each callable's inputs from the release with derive.py (signature and numpydoc,
pure; doctext.py reads the docstring's prose; dims.toml: the kit's sizes) into fixtures/certificates/inputs/
-> unroll.py traces and patches site after site (rules: unroll_rules.py) -> fakerun.py runs the call on
FakeTensors (fakecuda.py: the retry with inputs on the simulated cuda:0) ->
opjudge.py judges ops as ops (schema-derived inputs: derive.py) -> certify.py assembles (imports.py:
why a submodule did not import) -> certificate.py (coverage, table, release diff, the JIT-loader
set triage reads, Markdown; pure).
"""
