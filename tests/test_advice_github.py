"""`bin/pcgkit lab refresh-upstream`: issue/PR states re-read from GitHub's API, replayed from recorded responses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab import github
from lab.cli import main as lab_main
from pcgkit.advice.load import parse_reads
from pcgkit.advice.values import UpstreamRead

RECORDED = Path(__file__).parent / "data" / "github"


def _read(id_: str, project: str, kind: str, number: int, url: str, state: str = "open") -> UpstreamRead:
    return UpstreamRead(id_, project, kind, number, url, "old title", state, "2026-01-01", "by hand")


ISSUE = _read("flashinfer-2999", "flashinfer", "issue", 2999, "https://github.com/flashinfer-ai/flashinfer/issues/2999")
PR = _read("flashinfer-3081", "flashinfer", "pr", 3081, "https://github.com/flashinfer-ai/flashinfer/pull/3081")
OPEN = _read("sglang-23386", "sglang", "issue", 23386, "https://github.com/sgl-project/sglang/issues/23386")


def test_closed_issue_names_the_pr_that_closed_it():
    """A closed issue is read as closed, on the date of the close, by the PR whose merge commit closed it."""
    fresh = github.refresh_one(ISSUE, github.replay_fetch(RECORDED), "2026-12-01")
    assert (fresh.state, fresh.closed_at, fresh.closed_by, fresh.as_of) == ("closed", "2026-05-22", "flashinfer#3081", "2026-12-01")
    assert fresh.title.startswith("fp4_quantize is incompatible") and "GitHub REST API" in fresh.how


def test_merged_pr_gets_the_first_release_containing_it():
    """A merged PR's first release is the oldest non-prerelease tag published after the merge that contains its commit."""
    fresh = github.refresh_one(PR, github.replay_fetch(RECORDED), "2026-12-01")
    assert (fresh.state, fresh.closed_at, fresh.first_release) == ("merged", "2026-05-22", "0.6.12")
    assert "v0.6.12 contains merge commit 77477e275" in fresh.first_release_how


def test_open_issue_stays_open_and_is_redated():
    """An open issue is read as open, with no closing PR, dated the day of the refresh."""
    fresh = github.refresh_one(OPEN, github.replay_fetch(RECORDED), "2026-12-01")
    assert (fresh.state, fresh.closed_by, fresh.as_of) == ("open", "", "2026-12-01")


def test_code_and_document_reads_are_kept():
    """Reads that are not issues or PRs are not fetched (they are re-read by hand)."""
    doc = _read("x-doc", "flashinfer", "doc", 0, "https://example.org/doc", "pinned")
    assert github.refresh((doc,), lambda path: pytest.fail(f"fetched {path}"), "2026-12-01") == (doc,)


def test_missing_recorded_response_is_a_clear_error():
    """A path with no recorded response is a GitHubUnavailable naming it (a UsageError: one line, exit 2)."""
    with pytest.raises(github.GitHubUnavailable, match="issues/1"):
        github.replay_fetch(RECORDED)("repos/a/b/issues/1")


def test_replay_path_drops_the_query():
    """Recorded responses are named by the API path without its query string."""
    assert github.replay_path("repos/a/b/releases?per_page=100") == "repos/a/b/releases.json"


def test_command_refreshes_the_reads_file(tmp_path, capsys):
    """`lab refresh-upstream --replay` rewrites the reads file with the new states, dated, and keeps the quotes."""
    reads = tmp_path / "reads.json"
    reads.write_text(json.dumps({"schema": "pcgkit.upstream-reads/1", "reads": [
        {k: v for k, v in vars(r).items() if v != ""} for r in (ISSUE, PR, OPEN)],
        "quotes": [{"text": "q", "url": "https://example.org/q", "phase": "prefill/extend", "as_of": "2026-01-01"}]}))
    assert lab_main(["refresh-upstream", "--replay", str(RECORDED), "--reads", str(reads), "--today", "2026-12-01"]) == 0
    fresh, quotes = parse_reads(json.loads(reads.read_text()))
    assert [r.state for r in fresh] == ["closed", "merged", "open"] and len(quotes) == 1
    assert all(r.as_of == "2026-12-01" for r in fresh)
    assert "flashinfer#2999: open -> closed" in capsys.readouterr().err
