"""The sweep as cases of the kit's catalog: ids, opt-in accounting, the switch, and the CaseResult it records."""

from __future__ import annotations

import pytest

from pcgkit import catalog
from pcgkit.harness.hardware import SIMULATED_SM90
from pcgkit.sweep.cases import case_id, enabled_arches, parse_case_id, sweep_modes
from pcgkit.sweep.classify import Classification, SweepClass
from pcgkit.sweep.engine import SweepResult, arch_of
from pcgkit.sweep.specs import load_specs
from pcgkit.values.verdict import Verdict


def test_every_spec_entry_is_a_catalog_case_per_arch():
    """Each entry of entry_points.toml is a `sweep` family case for sm120, sm100 and sm90, declared once."""
    specs = load_specs()
    sweep = catalog.modes_of(catalog.Family.SWEEP)
    assert len(sweep) == 3 * len(specs)
    assert case_id("sm90", "rmsnorm") in sweep and catalog.entry("sweep.sm90.rmsnorm").case_module == "test_sweep.py"
    assert parse_case_id("sweep.sm120.op.flashinfer.fp4_quantize") == ("sm120", "op.flashinfer.fp4_quantize")
    assert parse_case_id("mode1") is None and parse_case_id("sglang-compile-sm90") is None


def test_opt_in_cases_are_outside_what_a_default_run_accounts_for():
    """all_modes() (a default run's accounting) leaves the opt-in cases out (the sweep, a --preflight launch);
    BY_ID has them."""
    assert not any(m.startswith("sweep.") for m in catalog.all_modes()) and "preflight-launch" not in catalog.all_modes()
    assert set(catalog.BY_ID) == set(catalog.all_modes()) | {m.id for m in sweep_modes()} | {"preflight-launch"}


@pytest.mark.parametrize("value, arches", [("", ()), ("0", ()), ("1", ("sm120", "sm100", "sm90")), ("sm90, sm120", ("sm90", "sm120"))])
def test_the_switch(value, arches):
    """PCGKIT_SWEEP: unset/0 off, 1 every arch, a list those arches."""
    assert enabled_arches(value) == arches


def test_an_unknown_arch_in_the_switch_is_a_clear_error():
    """A typo in PCGKIT_SWEEP fails loudly instead of sweeping nothing."""
    with pytest.raises(ValueError, match="unknown arch sm89"):
        enabled_arches("sm89")


def test_arch_of_a_real_device():
    """A real device files its results under its own family's arch id."""
    assert arch_of(SIMULATED_SM90) == "sm90"
    assert arch_of(type(SIMULATED_SM90)("B200", (10, 0))) == "sm100"
    assert arch_of(type(SIMULATED_SM90)("RTX PRO 6000", (12, 0))) == "sm120"


def _swept(cls: SweepClass, where: str, verdict: Verdict) -> SweepResult:
    return SweepResult(
        entry_id="rmsnorm", family="norm", target="flashinfer.rmsnorm", arch="sm90", device=SIMULATED_SM90.to_dict(),
        flashinfer="0.6.1", torch="2.9.1", classification=Classification(cls, where, loader="flashinfer-jit"),
        verdict=verdict.value, expected="breaks-in-jit-loader", expectation_link="https://example.invalid/2733",
        installed_signature="(input, weight)", simulation_replaced=("get_compute_capability",), refused=(),
        signature=None, duration_s=1.0,
    )


def test_a_sweep_result_becomes_a_case_result_with_the_class_as_evidence():
    """The CaseResult carries the kit's verdict, the class in its reason and the finer class as evidence."""
    from pcgkit.sweep.pytest_case import to_case_result

    result = to_case_result(_swept(SweepClass.BREAKS_JIT_LOADER, "core.py:169:register", Verdict.REPRODUCED), "sim-sm120")
    assert (result.mode, result.verdict, result.simulated) == ("sweep.sm90.rmsnorm", Verdict.REPRODUCED, True)
    assert result.reason == "breaks-in-jit-loader: core.py:169:register"
    sweep = result.evidence["sweep"]
    assert (sweep["class"], sweep["loader"], sweep["expected"]) == ("breaks-in-jit-loader", "flashinfer-jit", "breaks-in-jit-loader")
    assert result.to_dict()["device"]["compute_capability"] == "9.0"


def test_real_refuses_cleanly_without_a_gpu(monkeypatch):
    """`pcgkit sweep --real` on a host without CUDA raises the exit-3 error that says what it found."""
    from pcgkit.commands import sweep as cli
    from pcgkit.harness import hardware

    monkeypatch.setattr(hardware, "detect_cuda_devices", lambda: ())
    with pytest.raises(cli.NoGpuError, match="--real needs a CUDA GPU; found none") as caught:
        cli.real_device()
    assert caught.value.exit_code == 3
