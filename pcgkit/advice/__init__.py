"""The advice model: what the kit tells a user about their own versions, derived from measured cells and dated reads.

`advise(Versions(...), arch, evidence)` is pure; `load_evidence()` reads the matrix snapshot, the
dated upstream reads, the per-release table and the cost measurement. Every Statement names its
sources (cells, an upstream read with its date, a measurement, a release's parser) and whether a
simulated device stands behind it. The README box, compat.md, the dashboard, the issue drafts and
triage print these statements (`compile_unsafe`: a FlashInfer call the release's trace-safety certificate
found breaking in a JIT loader); none of them types a "fixed in" sentence of its own.
"""

from pcgkit.advice.load import load_evidence
from pcgkit.advice.model import Answer, CompileSafety, advise, arch_family, compile_unsafe, cost_statement
from pcgkit.advice.values import Evidence, Source, Statement, Versions

__all__ = ["Answer", "CompileSafety", "Evidence", "Source", "Statement", "Versions", "advise", "arch_family", "compile_unsafe", "cost_statement",
           "load_evidence"]
