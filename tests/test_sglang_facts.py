"""Per-version SGLang facts, read from real sglang source text.

The fixtures under tests/data/sglang_source/<version>/ are verbatim excerpts of the sglang wheels on
PyPI (each file's header names the path and version); they stand in for an installed sglang,
which the reference .venv does not have. Where sglang IS installed, the last test reads it.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from lab.sglang_facts import breakable_argv_from_actions
from pcgkit.harness.versions import installed_version
from pcgkit.sglang import dispatch as sglang_dispatch
from pcgkit.sglang import facts as sglang_facts
from pcgkit.sglang.case import runner_fullgraph_from_source
from pcgkit.sglang.dispatch import MODELOPT_MODULE, OTHER, SM120

SOURCES = Path(__file__).resolve().parent / "data" / "sglang_source"
FP4_UTILS = "sglang.srt.layers.quantization.fp4_utils"


def _text(version: str, name: str) -> str:
    return (SOURCES / version / name).read_text()


def _flags(version: str) -> sglang_facts.PiecewiseFlags:
    cuda_graph_config = SOURCES / version / "cuda_graph_config.py.txt"
    prefill = sglang_facts.prefill_default_from_source(cuda_graph_config.read_text()) if cuda_graph_config.exists() else None
    return sglang_facts.flags_from_source({"server_args": _text(version, "server_args.txt")}, version, prefill, "test")


@pytest.mark.parametrize(
    "version, state, enable, disable, force",
    [
        pytest.param("0.5.3.post2", "opt-in", "--enable-piecewise-cuda-graph", None, None, id="0.5.3.post2"),
        pytest.param("0.5.8", "opt-in", "--enable-piecewise-cuda-graph", None, None, id="0.5.8"),
        pytest.param("0.5.10.post1", "on-by-default", None, "--disable-piecewise-cuda-graph",
                     "--enforce-piecewise-cuda-graph", id="0.5.10.post1"),
        pytest.param("0.5.16", "opt-in", "--cuda-graph-backend-prefill=tc_piecewise",
                     "--cuda-graph-backend-prefill=disabled", "--enforce-piecewise-cuda-graph", id="0.5.16"),
        pytest.param("0.5.23", "not-shipped", None, None, None, id="0.5.23"),
    ],
)
def test_piecewise_flags_from_source(version, state, enable, disable, force):
    """Each generation of flags is read from that version's own parser source."""
    flags = _flags(version)
    assert (flags.default_state, flags.enable, flags.disable) == (state, enable, disable)
    assert (flags.force or "").startswith(force or "")
    assert (flags.force is None) == (force is None)
    assert "source text" in flags.source and "import of sglang.srt.server_args failed: test" in flags.source


@pytest.mark.parametrize(
    "version, enable_argv, force_argv, on_values",
    [
        pytest.param("0.5.3.post2", ("--enable-piecewise-cuda-graph",), (),
                     (("enable_piecewise_cuda_graph", True),), id="0.5.3.post2"),
        pytest.param("0.5.8", ("--enable-piecewise-cuda-graph",), (), (("enable_piecewise_cuda_graph", True),), id="0.5.8"),
        pytest.param("0.5.10.post1", (), ("--enforce-piecewise-cuda-graph",),
                     (("disable_piecewise_cuda_graph", False), ("enforce_piecewise_cuda_graph", True)), id="0.5.10.post1"),
        # opt-in (prefill default breakable): the backend choice, never the deprecated --enforce-... alias
        pytest.param("0.5.16", ("--cuda-graph-backend-prefill", "tc_piecewise"), (),
                     (("cuda_graph_backend_prefill", "tc_piecewise"),), id="0.5.16"),
        pytest.param("0.5.23", (), (), (), id="0.5.23"),
    ],
)
def test_launch_argv_tokens_from_source(version, enable_argv, force_argv, on_values):
    """The clean argv tokens a launch uses, per generation of flags, from that version's own parser source."""
    flags = _flags(version)
    assert (flags.enable_argv, flags.force_argv, flags.on_values) == (enable_argv, force_argv, on_values)


def test_deprecated_alias_is_labelled_only_in_the_readable_fields():
    """0.5.16's --enforce-... is a deprecated alias: '[deprecated]' in `force`, absent from force_argv."""
    flags = _flags("0.5.16")
    assert flags.force == "--enforce-piecewise-cuda-graph [deprecated]" and flags.force_argv == ()


def test_deprecated_enable_flag_is_not_the_enable_answer():
    """0.5.10's --enable-piecewise-cuda-graph is a DeprecatedAction: listed, labelled, never 'enable'."""
    flags = _flags("0.5.10.post1")
    assert "--enable-piecewise-cuda-graph" in flags.all_flags
    assert "--enable-piecewise-cuda-graph [deprecated]" in flags.note


def test_removed_tc_piecewise_is_reported_with_the_offered_backends():
    """0.5.23 offers no torch.compile prefill backend: the note lists what the parser offers."""
    flags = _flags("0.5.23")
    assert "['full', 'breakable', 'disabled']" in flags.note and "no tc_piecewise" in flags.note


def test_prefill_default_is_the_cuda_branch():
    """default_prefill_backend(): the value on a CUDA machine, not the CPU fallback."""
    assert sglang_facts.prefill_default_from_source(_text("0.5.16", "cuda_graph_config.py.txt")) == "breakable"
    assert sglang_facts.prefill_default_from_source("def other(): pass") is None


def test_flags_from_real_argparse_actions():
    """The argparse path reads defaults and const aliases from real argparse.Action objects."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--disable-piecewise-cuda-graph", action="store_true")
    parser.add_argument("--enforce-piecewise-cuda-graph", action="store_true")
    parser.add_argument("--enable-piecewise-cuda-graph", action="store_true", help="Deprecated: on by default.")
    actions = [sglang_facts.action_info(a) for a in parser._actions]
    flags = sglang_facts.flags_from_actions(actions, "x", source="argparse")
    assert (flags.default_state, flags.enable, flags.disable) == ("on-by-default", None, "--disable-piecewise-cuda-graph")
    parser = argparse.ArgumentParser()
    parser.add_argument("--enable-piecewise-cuda-graph", action="store_true")
    flags = sglang_facts.flags_from_actions([sglang_facts.action_info(a) for a in parser._actions], "x")
    assert (flags.default_state, flags.enable) == ("opt-in", "--enable-piecewise-cuda-graph")


def test_piecewise_flags_dataclass_is_frozen():
    """Part B builds launch commands from this value: it must not be mutable."""
    flags = _flags("0.5.8")
    with pytest.raises(dataclasses.FrozenInstanceError):
        flags.enable = "--something-else"  # type: ignore[misc]


def _dispatch(version: str) -> dict:
    sources = {MODELOPT_MODULE: _text(version, "modelopt_quant.py.txt")}
    if (SOURCES / version / "fp4_utils.py.txt").exists():
        sources[FP4_UTILS] = _text(version, "fp4_utils.py.txt")
    return sglang_dispatch.dispatch_from_sources(sources)


@pytest.mark.parametrize(
    "version, sm120, other, op",
    [
        pytest.param("0.5.3.post2", "sgl_kernel.scaled_fp4_quant", "sgl_kernel.scaled_fp4_quant", None, id="0.5.3.post2"),
        pytest.param("0.5.8", "flashinfer.fp4_quantize", "sgl_kernel.scaled_fp4_quant", None, id="0.5.8"),
        pytest.param("0.5.10.post1", "flashinfer.fp4_quantize", "sglang.jit_kernel.nvfp4.scaled_fp4_quant", None,
                     id="0.5.10.post1"),
        pytest.param("0.5.12", f"{FP4_UTILS}.fp4_quantize", f"{FP4_UTILS}.fp4_quantize", "register_custom_op_from_extern",
                     id="0.5.12"),
        pytest.param("0.5.23", f"{FP4_UTILS}.fp4_quantize", f"{FP4_UTILS}.fp4_quantize", "register_custom_op_from_extern",
                     id="0.5.23"),
    ],
)
def test_fp4_dispatch_per_family(version, sm120, other, op):
    """The callable apply() quantizes with, per family, followed through sglang's own modules."""
    dispatch = _dispatch(version)
    assert dispatch[SM120].qualname == sm120
    assert dispatch[OTHER].qualname == other
    assert (dispatch[SM120].torch_op or "").startswith(op or "") and (dispatch[SM120].torch_op is None) == (op is None)


def test_sgl_kernel_op_recognised_by_sglangs_fake_registration():
    """0.5.8 registers a fake for sgl_kernel::scaled_fp4_quant: the non-SM120 path is a torch op."""
    assert "torch.ops.sgl_kernel.scaled_fp4_quant" in (_dispatch("0.5.8")[OTHER].torch_op or "")


def test_fallback_import_recorded():
    """0.5.10's SM120 branch falls back to sglang.jit_kernel when flashinfer lacks fp4_quantize."""
    assert _dispatch("0.5.10.post1")[SM120].fallbacks == ("sglang.jit_kernel.nvfp4.scaled_fp4_quant",)


def test_unknown_source_shape_is_an_error():
    """A release whose apply() no longer has the known call raises DispatchNotFound (not a guess)."""
    with pytest.raises(sglang_dispatch.DispatchNotFound):
        sglang_dispatch.dispatch_from_sources({MODELOPT_MODULE: "class ModelOptFp4LinearMethod:\n    def apply(self): pass\n"})


@pytest.mark.parametrize("version", ["0.5.8", "0.5.23"])
def test_runner_fullgraph(version):
    """The fullgraph value the runner passes: a literal (0.5.8) or its parameter default (0.5.23)."""
    assert runner_fullgraph_from_source(_text(version, "runner.py.txt")) is True
    source = _text(version, "runner.py.txt").replace("fullgraph=True", "fullgraph=False").replace(
        "fullgraph: bool = True", "fullgraph: bool = False")
    assert runner_fullgraph_from_source(source) is False


@pytest.mark.skipif(installed_version("sglang") is None, reason="sglang not installed in this environment")
def test_installed_sglang_facts():
    """With sglang installed (matrix cells), facts come from the installed files and name their source."""
    flags = sglang_facts.piecewise_flags()
    assert flags.sglang == installed_version("sglang")
    assert flags.default_state in ("opt-in", "on-by-default", "not-shipped", "unknown")
    assert set(sglang_dispatch.installed_dispatch()) == {SM120, OTHER}


def test_piecewise_flags_without_sglang_raises(monkeypatch):
    """No sglang installed: a LookupError saying so (the case turns that into not-applicable)."""
    monkeypatch.setattr(sglang_facts, "installed_version", lambda name: None)
    with pytest.raises(LookupError, match="not installed"):
        sglang_facts.piecewise_flags()


def test_failed_import_leaves_no_orphan_submodules(monkeypatch):
    """After a failed `import sglang...`, orphaned sglang.* entries are dropped (no KeyError later)."""
    import sys
    import types

    monkeypatch.delitem(sys.modules, "sglang", raising=False)
    monkeypatch.setitem(sys.modules, "sglang.srt", types.ModuleType("sglang.srt"))
    sglang_facts._forget_partial_import("sglang")
    assert "sglang.srt" not in sys.modules


def test_breakable_argv_is_read_from_the_parser_in_either_form():
    """0.5.11-0.5.13's --enable-breakable-cuda-graph (as the 0.5.12 wheel's server_args.py:6449 adds it), or the
    0.5.14+ prefill backend choice `breakable`; a parser with neither has no breakable mode."""
    old = argparse.ArgumentParser(add_help=False)
    old.add_argument("--enable-breakable-cuda-graph", action="store_true",
                     help="Use breakable CUDA graph for piecewise capture instead of torch.compile-based splitting.")
    old.add_argument("--enforce-piecewise-cuda-graph", action="store_true")
    new = argparse.ArgumentParser(add_help=False)
    new.add_argument("--cuda-graph-backend-prefill", choices=["breakable", "full", "disabled", "tc_piecewise"])
    none = argparse.ArgumentParser(add_help=False)
    none.add_argument("--cuda-graph-backend-prefill", choices=["full", "disabled"])
    read = lambda p: breakable_argv_from_actions(sglang_facts.action_info(a) for a in p._actions)  # noqa: E731
    assert read(old) == ("--enable-breakable-cuda-graph",)
    assert read(new) == ("--cuda-graph-backend-prefill", "breakable")
    assert read(none) is None
