"""The one answer: what the kit knows and recommends for a user's releases, architecture and launch flags.

`advise(Versions(...), arch, evidence, flags)` (pcgkit.advice.answer) is pure and returns one Answer value: affected
or not and by which evidence, what to pass, what it costs, where it is fixed, which call is safe, each part a
Statement that names its sources (cells, an upstream read with its date, a measurement, a release's parser) and
whether a simulated device stands behind it. `load_evidence()` reads the kit's data files once. Every surface
(README box, docs/answers.md, `advice show`, `triage`, `preflight`) renders the Answer with a short template of
pcgkit.advice.render and decides nothing.
"""

from pcgkit.advice.answer import Answer, UnknownInput, advise, check_input, cost_statement, every_release
from pcgkit.advice.load import load_evidence
from pcgkit.advice.model import CompileSafety, arch_family, compile_unsafe
from pcgkit.advice.values import Evidence, Source, Statement, Versions

__all__ = ["Answer", "CompileSafety", "Evidence", "Source", "Statement", "UnknownInput", "Versions", "advise",
           "arch_family", "check_input", "compile_unsafe", "cost_statement", "every_release", "load_evidence"]
