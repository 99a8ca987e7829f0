"""SGLang-level case -- SGLang's own FP4 activation quantize through SGLang's own install_torch_compiled.

For the installed sglang: the callable ModelOptFp4LinearMethod.apply quantizes activations with
(read per GPU family from that version's modelopt_quant.py and imported for real), in a one-op
module compiled by sglang.srt.compilation.compile.install_torch_compiled with the fullgraph value
the piecewise runner passes, and an eager backend_factory (SGLang's own backend needs CUDA-only
kernels). Runs for SM120 and for a non-SM120 family (SM90; simulated on the simulated target).
Without sglang installed (the reference .venv) the case is not-applicable; the matrix's sglang
cells run it. Issue 5; pcgkit/sglang/case.py has the details.
"""

from pcgkit.harness.casekit import CaseContext
from pcgkit.sglang.case import SGLANG_COMPILE_OTHER, SGLANG_COMPILE_SM120, facts_evidence, reproduce_family
from pcgkit.sglang.dispatch import OTHER, SM120
from pcgkit.values.trace import TraceOutcome

MODE = SGLANG_COMPILE_SM120


def reproduce_sm120(ctx: CaseContext) -> TraceOutcome:
    ctx.evidence["sglang_facts"] = facts_evidence()
    return reproduce_family(ctx, SM120)


def reproduce_other_family(ctx: CaseContext) -> TraceOutcome:
    ctx.evidence["sglang_facts"] = facts_evidence()
    return reproduce_family(ctx, OTHER)


def test_sglang_compile_sm120(pcgkit_case, target):
    """SGLang's SM120 FP4 quantize under its own install_torch_compiled: verdict per sglang version."""
    pcgkit_case.run(SGLANG_COMPILE_SM120, reproduce_sm120)


def test_sglang_compile_other_family(pcgkit_case, target):
    """The same for a non-SM120 family (SM90), which SGLang may dispatch elsewhere."""
    pcgkit_case.run(SGLANG_COMPILE_OTHER, reproduce_other_family)


# setup-stopped rows (missing hardware) are recorded under the test's own mode
test_sglang_compile_sm120.pcgkit_mode = SGLANG_COMPILE_SM120
test_sglang_compile_other_family.pcgkit_mode = SGLANG_COMPILE_OTHER
