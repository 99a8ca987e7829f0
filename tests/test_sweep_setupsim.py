"""The simulated wrapper set-up (pcgkit.sweep.setupsim): what it stands in for, what it says, where it stops."""

from __future__ import annotations

import pytest

from pcgkit.sweep import engine
from pcgkit.sweep.classify import Observation, SweepClass, classify
from pcgkit.sweep.engine import SetupFailed
from pcgkit.sweep.setupsim import NOT_BUILT, PINNED, SYNCHRONIZED, UnbuiltModule, simulated_setup
from pcgkit.sweep.specs import SpecError, load_specs, parse_entry
from pcgkit.values.signature import Signature


def test_pinned_host_buffers_are_allocated_pageable_and_each_is_recorded():
    """pin_memory=True and Tensor.pin_memory() give the same host tensor unpinned inside the block, each listed."""
    import torch

    with simulated_setup() as record:
        staged = torch.empty((8,), dtype=torch.uint8, pin_memory=True, device="cpu")
        copied = torch.zeros(4).pin_memory()
        torch.cuda.synchronize()
    assert staged.shape == (8,) and staged.dtype == torch.uint8 and staged.device.type == "cpu"
    assert not staged.is_pinned() and copied.shape == (4,)
    assert record == [f"{PINNED}: empty", f"{PINNED}: Tensor.pin_memory", SYNCHRONIZED]


def test_unbuilt_module_answers_only_the_planner_with_an_empty_plan_info():
    """In the simulated set-up a module's `plan` returns an empty tvm_ffi Array (recorded); its kernels refuse."""
    import tvm_ffi

    planned: list[str] = []
    module = UnbuiltModule("batch_decode_x", planned)
    plan_info = module.plan(1, 2)
    assert isinstance(plan_info, tvm_ffi.Array) and len(plan_info) == 0
    assert planned and "batch_decode_x.plan" in planned[0]
    with pytest.raises(RuntimeError, match=f"batch_decode_x {NOT_BUILT}"):
        module.run(1)
    with pytest.raises(RuntimeError, match=NOT_BUILT):
        UnbuiltModule("pre_built").plan()  # the unroller's pre-build answers no planner


def test_plan_method_names_the_set_up_call_and_needs_plan():
    """`plan_method` picks the set-up method (begin_forward); without `plan`, or not an identifier, it is refused."""
    base = {"id": "x", "target": "flashinfer.W.forward", "family": "cascade", "releases": ">=0.7.0",
            "construct": {"args": ["u8[16]"]}, "plan": {"args": [1]}}
    assert parse_entry({**base, "plan_method": "begin_forward"}).plan_method == "begin_forward"
    assert parse_entry(base).plan_method == "plan"
    for bad in ({**base, "plan_method": "a b"}, {k: v for k, v in {**base, "plan_method": "begin_forward"}.items() if k != "plan"}):
        with pytest.raises(SpecError, match="plan_method"):
            parse_entry(bad)
    shipped = {s.id: s for s in load_specs()}
    assert shipped["shared_prefix_decode_forward"].plan_method == "begin_forward"


class _PlannerReadsValues:
    """A wrapper whose plan() reads the planner's first value, as 0.7.x BatchPOD's does."""

    def __init__(self, workspace):
        self.workspace = workspace

    def plan(self, n):
        import tvm_ffi

        return tvm_ffi.convert([])[0]

    def run(self, x):
        return x


def test_a_set_up_that_reads_the_stand_in_plan_info_is_a_named_simulation_gap(monkeypatch):
    """Indexing the empty plan_info fails the set-up as a simulation gap that names what stood in, not a spec error."""
    spec = parse_entry({"id": "w", "target": "fake.W.run", "family": "attention", "releases": ">=0",
                        "construct": {"args": ["u8[16]"]}, "plan": {"args": [1]}, "args": ["bf16[2]"]})
    monkeypatch.setattr(engine, "resolve", lambda target: _PlannerReadsValues)
    with pytest.raises(SetupFailed) as caught:
        engine.build_callable(spec, None, "cpu", simulate_setup=True)
    assert caught.value.needs_gpu and str(caught.value).startswith("simulation gap in the simulated set-up")
    with pytest.raises(SetupFailed) as unsimulated:  # on a GPU host nothing is simulated: the error is the set-up's own
        engine.build_callable(spec, None, "cpu", simulate_setup=False)
    assert not unsimulated.value.needs_gpu


def test_triton_driver_discovery_under_dynamo_is_a_simulation_gap():
    """A trace that stops in triton's driver discovery (no GPU driver on the host) is a simulation gap, not a break."""
    signature = Signature(exception_type="Unsupported", message_head="Attempted to call function marked as skipped",
                          explanation="Dynamo developers have intentionally marked that the function "
                                      "`HIPDriver.is_active` in file `.../triton/backends/amd/driver.py` should not be traced.")
    result = classify(Observation("raised", signature=signature))
    assert result.cls is SweepClass.ERROR and result.where.startswith("simulation gap (Driver.is_active)")


def test_the_seed_releases_decode_wrapper_is_set_up_simulated_and_run_breaks_at_its_kernel_call():
    """flashinfer 0.6.1: construct + plan() run simulated (each stand-in listed, on the sweep result too; the loader
    cache left empty) and run() traces to the compiled kernel call (gb0156), not to a set-up failure."""
    pytest.importorskip("flashinfer")
    from pcgkit.harness.hardware import SIMULATED_ARCHES
    from pcgkit.harness.simulate import simulated_sm120
    from pcgkit.sweep.guard import no_kernels

    spec = next(s for s in load_specs() if s.id == "batch_decode_run")
    with simulated_sm120(), no_kernels():
        fn, record = engine.build_callable(spec, engine.resolve(spec.target), "cpu", simulate_setup=True)
    assert [r.split(":")[0] for r in record] == ["pin_memory", "JIT build", "host planner"]
    assert callable(fn)
    import flashinfer.decode

    assert flashinfer.decode.get_batch_decode_module.cache_info().currsize == 0
    result = engine.sweep_entry(spec, "sm120", SIMULATED_ARCHES["sm120"], engine.installed_versions())
    assert result.classification.cls is SweepClass.BREAKS_ELSEWHERE
    assert result.classification.where.startswith("gb0156 decode.py")
    assert [r for r in result.simulation_replaced if r.startswith("set-up: ")] == [f"set-up: {r}" for r in record]


def test_the_certificate_page_shows_what_stood_in_for_a_wrappers_set_up():
    """A row that carries setup_simulated prints it above its unrolled stack, labelled simulated."""
    from lab.sweep.certificate_build import render_certificate

    site = {"index": 1, "frame": "flashinfer/decode.py:401:run_batch_decode", "graph_break_id": "gb0156",
            "what": "Function.__call__", "action": "stop", "patched": "", "answer": "", "simulated": False, "note": "kernel"}
    row = {"target": "flashinfer.W.run", "status": "breaks", "inputs_from": "hand spec", "where": "gb0156", "sites": [site],
           "setup_simulated": [f"{PINNED}: empty", SYNCHRONIZED]}
    cert = {"flashinfer": "0.7.0", "arch": "sm120", "simulated": True, "device": "simulated sm120 on CPU", "torch": "2.9.1",
            "counts": {}, "coverage": {"callables judged": 1}, "callables": [row], "ops": []}
    page = render_certificate(cert)
    assert f"set-up (simulated): {PINNED}: empty; {SYNCHRONIZED}" in page
    assert page.index("set-up (simulated)") < page.index("1. `flashinfer/decode.py:401:run_batch_decode`")
