"""Documented commands that crashed every time now run: the certificate builder's --discover and certificate (once
`sweep --discover` / `--certificate`, now `bin/pcgkit lab certify`), into the --reports folder."""

from __future__ import annotations

import types

from .helpers import assert_one_line_error, run_main


def run_lab(argv: list[str], capsys) -> tuple[int, str, str]:
    from lab.cli import main as lab_main

    status = lab_main(argv)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_sweep_discover_writes_into_reports(tmp_path, capsys, monkeypatch):
    """certify --discover (then sweep --discover) wrote to args.out, which --reports never sets ('Namespace' has no attribute 'out')."""
    found = types.SimpleNamespace(flashinfer="0.6.1", to_dict=lambda: {"schema": "stand-in"})
    monkeypatch.setattr("lab.sweep.discover.discover", lambda: found)  # the 17 s import walk, stood in
    monkeypatch.setattr("lab.sweep.discovery.plan_judgement", lambda found, targets: "plan")
    monkeypatch.setattr("lab.sweep.discovery.spec_targets_for", lambda specs, version: ())
    monkeypatch.setattr("lab.sweep.discovery.render_counts", lambda found, plan: "counts: stand-in")
    status, out, err = run_lab(["certify", "--discover", "--reports", str(tmp_path / "sweep")], capsys)
    assert status == 0, err
    assert (tmp_path / "sweep" / "discovery-0.6.1.json").is_file()


def test_sweep_certificate_writes_into_reports(tmp_path, capsys, monkeypatch):
    """certify (then sweep --certificate) writes certificate-*.json/md into --reports instead of an internal error."""
    monkeypatch.setattr("lab.sweep.certify.certify",
                        lambda arch, device, **kw: {"flashinfer": "0.6.1", "counts": {}, "coverage": {"callables judged": 0}})
    monkeypatch.setattr("lab.sweep.certificate_build.render_certificate", lambda cert: "# stand-in\n")
    status, out, err = run_lab(["certify", "--arch", "sm120", "--reports", str(tmp_path / "c")], capsys)
    assert status == 0, err
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["certificate-0.6.1-sm120.json",
                                                                 "certificate-0.6.1-sm120.md"]


def test_parity_from_results_with_a_compat_json_is_one_line(tmp_path, capsys):
    """parity --from-results given a compat.json: one usage line saying what to pass (was an internal error, exit 3)."""
    compat = tmp_path / "compat.json"
    compat.write_text('{"schema": "pcgkit.compat/2", "cells": []}\n')
    status, _, err = run_main(["parity", "--from-results", str(compat), "--reports", str(tmp_path / "p")], capsys)
    assert status == 2 and "results.json" in assert_one_line_error(err) and "internal error" not in err
