"""The one catalog of cases: every case the kit runs is declared here, once.

An entry says what a case is (its Mode: id, title, known signature, and the rule that judges it),
which family it belongs to, which module in cases/ runs it, whether `pcgkit repro` can export it
as a standalone script, and what a user can do about the failure it measures. Every consumer
reads this table: the report's columns and their order, `pcgkit run`'s accounting of missing
cases, repro export, issue drafts, bisect's `--mode` choices, parity and the SGLang section.
Adding a case: its Mode (beside the rules it uses), one entry here, one module in cases/, its
expectations in fixtures/expectations.toml, and a signature fixture under tests/data/.
"""

from __future__ import annotations

import dataclasses

from pcgkit.e2e.control import CONTROL_MODE
from pcgkit.e2e.logclass import E2E_MODE
from pcgkit.preflight.case import PREFLIGHT_LAUNCH
from pcgkit.sglang.case import SGLANG_COMPILE_OTHER, SGLANG_COMPILE_SM120
from pcgkit.sweep.cases import sweep_modes
from pcgkit.values.scopes import SCOPE_ALL, SCOPE_SGLANG_LEVEL
from pcgkit.values.verdict import Word
from pcgkit.verdicts.fixmodes import (
    FIX_ALLOW_IN_GRAPH,
    FIX_CUSTOM_OP,
    FIX_NO_FULLGRAPH,
    FIX_NONSTRICT_TRACE,
    FIX_UPSTREAM_OP,
)
from pcgkit.verdicts.modes import MODE1, MODE2, MODE3, MODE4, Mode


class Family(Word):
    """Column groups of the report, in this order."""

    FAILURE = "failure"  # the bug's failure modes, at FlashInfer level
    FIX = "fix"  # candidate, attempted and upstream fixes: the verdict of a working fix is `fixed`
    SGLANG = "sglang"  # through SGLang's own compile wrapper and FP4 dispatch
    E2E = "e2e"  # a real SGLang server with piecewise CUDA graphs
    SWEEP = "sweep"  # every FlashInfer entry point under fullgraph, per arch (opt-in: PCGKIT_SWEEP)


@dataclasses.dataclass(frozen=True)
class CaseEntry:
    mode: Mode
    family: Family
    case_module: str  # file name under cases/
    exportable: bool  # `pcgkit repro` can cut it into a script that runs without the kit
    workaround: str = ""  # for a failure mode: the workaround it measures, in the user's words
    # Runs only when asked (the sweep: ~100 cases per environment): a default run does not report
    # it, so all_modes() -- what a run must account for -- leaves it out.
    opt_in: bool = False

    @property
    def id(self) -> str:
        return self.mode.id


CATALOG: tuple[CaseEntry, ...] = (
    CaseEntry(MODE1, Family.FAILURE, "test_mode1_nvcc_subprocess.py", exportable=True),
    CaseEntry(MODE2, Family.FAILURE, "test_mode2_jit_loader.py", exportable=True,
              workaround="patch `flashinfer.jit.cpp_ext.get_cuda_version` to answer without running nvcc"),
    CaseEntry(MODE3, Family.FAILURE, "test_mode3_lru_cache.py", exportable=True,
              workaround="pre-warm `get_cuda_version()` (its functools cache) eagerly before compiling"),
    CaseEntry(MODE4, Family.FAILURE, "test_mode4_disable_vs_fullgraph.py", exportable=True,
              workaround="wrap `flashinfer.fp4_quantize` in `torch.compiler.disable`"),
    CaseEntry(FIX_CUSTOM_OP, Family.FIX, "test_fix_custom_op.py", exportable=False),
    CaseEntry(FIX_ALLOW_IN_GRAPH, Family.FIX, "test_fix_allow_in_graph.py", exportable=False,
              workaround="`torch.compiler.allow_in_graph(get_fp4_quantization_module)`"),
    CaseEntry(FIX_NO_FULLGRAPH, Family.FIX, "test_fix_no_fullgraph.py", exportable=False),
    CaseEntry(FIX_UPSTREAM_OP, Family.FIX, "test_fix_upstream_op.py", exportable=False),
    CaseEntry(FIX_NONSTRICT_TRACE, Family.FIX, "test_fix_nonstrict_trace.py", exportable=False,
              workaround="wrap `flashinfer.fp4_quantize` in `torch.compiler.nonstrict_trace`"),
    CaseEntry(SGLANG_COMPILE_SM120, Family.SGLANG, "test_sglang_compile.py", exportable=False),
    CaseEntry(SGLANG_COMPILE_OTHER, Family.SGLANG, "test_sglang_compile.py", exportable=False),
    CaseEntry(E2E_MODE, Family.E2E, "test_e2e_piecewise_launch.py", exportable=False),
    # The same launch path with a bf16 checkpoint: whether piecewise capture works here at all.
    CaseEntry(CONTROL_MODE, Family.E2E, "test_e2e_piecewise_control.py", exportable=False),
    # A team's launch file (`pcgkit matrix --preflight FILE`): opt-in, reported only when a launch is given.
    CaseEntry(PREFLIGHT_LAUNCH, Family.SGLANG, "test_preflight_launch.py", exportable=False, opt_in=True),
    # One case per (arch, entry point) of pcgkit/sweep/entry_points.toml, generated from that table.
    *(CaseEntry(mode, Family.SWEEP, "test_sweep.py", exportable=False, opt_in=True) for mode in sweep_modes()),
)

BY_ID: dict[str, CaseEntry] = {e.id: e for e in CATALOG}
FAMILY_ORDER: tuple[Family, ...] = tuple(Family)
# A matrix cell's scope (pcgkit.values.scopes) -> the families it runs. SGLang-level cases
# import the cell's own sglang, so each SGLang release runs them in its own install.
SCOPE_FAMILIES: dict[str, tuple[Family, ...]] = {
    SCOPE_ALL: FAMILY_ORDER,
    SCOPE_SGLANG_LEVEL: (Family.SGLANG, Family.E2E),
}


def all_modes() -> dict[str, Mode]:
    """Every case a default run reports, Mode by id, in catalog order (opt-in cases left out)."""
    return {e.id: e.mode for e in CATALOG if not e.opt_in}


def modes_in_scope(scope: str) -> dict[str, Mode]:
    """The cases a run of that scope reports (opt-in ones left out), Mode by id, in catalog order."""
    families = SCOPE_FAMILIES[scope]
    return {e.id: e.mode for e in CATALOG if not e.opt_in and e.family in families}


def modes_of(family: Family) -> dict[str, Mode]:
    return {e.id: e.mode for e in CATALOG if e.family is family}


def entry(case_id: str) -> CaseEntry | None:
    return BY_ID.get(case_id)


def exportable_ids() -> list[str]:
    return [e.id for e in CATALOG if e.exportable]


def workarounds() -> list[CaseEntry]:
    """The failure modes that measure a workaround a user might try (mode 2-4, allow_in_graph)."""
    return [e for e in CATALOG if e.workaround]
