"""A preflight probe that stops names whose fault it is (checkpoint, release, environment) and answers unknown (11)."""

from __future__ import annotations

import argparse
import json
import os
import types

import pytest

from pcgkit.catalog import Family, modes_of
from pcgkit.harness.casekit import NotApplicable
from pcgkit.preflight import probe
from pcgkit.preflight.answer import Answer, decide


@pytest.fixture
def reach_the_checkpoint(monkeypatch, tmp_path):
    """The probe with an installed-looking sglang up to the checkpoint read (no sglang here: its steps stood in)."""
    root = tmp_path / "sglang"
    (root / "srt" / "models").mkdir(parents=True)
    (root / "srt" / "models" / "llama.py").write_text("EntryClass = LlamaForCausalLM\n")
    checkpoint = tmp_path / "ckpt"
    checkpoint.mkdir()
    monkeypatch.setattr("pcgkit.harness.versions.installed_version", lambda name: "0.4.0" if name == "sglang" else None)
    monkeypatch.setattr("pcgkit.sglang.facts.sglang_root", lambda: root)
    monkeypatch.setattr("pcgkit.sglang.facts.piecewise_flags", lambda: types.SimpleNamespace(to_dict=dict))
    monkeypatch.setattr(probe, "parse_launch", lambda argv: argparse.Namespace(model_path=str(checkpoint)))
    return checkpoint


def _answer(checkpoint):
    doc = probe.probe("sm120", ["--model-path", str(checkpoint)])
    return doc, decide(doc, modes_of(Family.FAILURE))


def test_a_200000_deep_config_is_the_checkpoints_fault(reach_the_checkpoint):
    """config.json nested 200,000 deep: unknown, blamed on the checkpoint (was a probe crash read as exit 4)."""
    (reach_the_checkpoint / "config.json").write_text("[" * 200_000 + "]" * 200_000)
    doc, answer = _answer(reach_the_checkpoint)
    assert doc["fault"] == probe.CHECKPOINT and "nested too deeply" in doc["unresolved"]
    assert answer.answer is Answer.UNKNOWN and answer.reason.startswith("the checkpoint:")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_fifo_or_dev_zero_as_config_is_refused_not_read(reach_the_checkpoint, kind):
    """config.json as a FIFO (would hang) or a link to /dev/zero (would eat memory): one reason, the checkpoint's."""
    config = reach_the_checkpoint / "config.json"
    os.mkfifo(config) if kind == "fifo" else os.symlink("/dev/zero", config)
    doc, answer = _answer(reach_the_checkpoint)
    assert doc["fault"] == probe.CHECKPOINT and answer.answer is Answer.UNKNOWN


def test_a_quant_config_without_quantization_is_the_checkpoints_fault(reach_the_checkpoint, monkeypatch):
    """SGLang's quantization code raising KeyError('quantization') on the checkpoint: unknown, the checkpoint named."""
    (reach_the_checkpoint / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"],
                                                                  "hidden_size": 64}))

    def sglang_reads_it(config, args):  # what ModelOpt's from_config does with hf_quant_config.json's dict
        raise KeyError("quantization")

    monkeypatch.setattr(probe, "bare_model_config", sglang_reads_it)
    doc, answer = _answer(reach_the_checkpoint)
    assert doc["fault"] == probe.CHECKPOINT and "quantization" in doc["unresolved"]
    assert answer.answer is Answer.UNKNOWN


def test_a_release_older_than_piecewise_graphs_is_the_releases_fault(reach_the_checkpoint, monkeypatch):
    """No piecewise runner in the release: unknown naming the release, never 'check the pins' (exit 4)."""
    (reach_the_checkpoint / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"],
                                                                  "hidden_size": 64}))
    monkeypatch.setattr(probe, "bare_model_config", lambda config, args: types.SimpleNamespace(quantization=None))
    monkeypatch.setattr(probe, "load_capability_check", lambda model_config, root: {})
    monkeypatch.setattr(probe, "auto_disable", lambda args, model_config: (None, "no check in this release"))
    monkeypatch.setattr(probe, "resolved_prefill_backend", lambda args, model_config: (None, "no config in this release"))
    monkeypatch.setattr("pcgkit.preflight.resolve.piecewise_state",
                        lambda *args: types.SimpleNamespace(to_dict=dict, on=True))

    def no_runner(root):
        raise NotApplicable("no piecewise runner calls install_torch_compiled with a fullgraph value in this sglang")

    monkeypatch.setattr("pcgkit.sglang.case.runner_fullgraph", no_runner)
    doc, answer = _answer(reach_the_checkpoint)
    assert doc["fault"] == probe.RELEASE and "0.4.0" in doc["unresolved"]
    assert answer.answer is Answer.UNKNOWN and answer.reason.startswith("the release:")
