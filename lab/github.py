"""Refresh the dated upstream reads (fixtures/upstream_reads.json) from GitHub's REST API. Pure but for `live_fetch`.

`refresh(reads, fetch, today)` asks, for every issue and PR read, its state, when it closed or merged,
which PR closed an issue and the first release tag that contains a merged PR, and returns new reads
dated `today`. `fetch(path)` returns the decoded JSON of `https://api.github.com/<path>`: `live_fetch`
over HTTPS (GITHUB_TOKEN used when set, never printed), or `replay_fetch(folder)` over recorded
responses (tests; this machine cannot reach GitHub). Code and document reads are kept as they are:
they are re-read by hand, and the staleness test says when.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from pcgkit.advice.values import UpstreamRead
from pcgkit.errors import UsageError

API = "https://api.github.com/"
Fetch = Callable[[str], Any]
MAX_TAGS_COMPARED = 12  # per merged PR: releases published after the merge, oldest first
_REPO = re.compile(r"https://github\.com/([^/]+/[^/]+)/(?:issues|pull)/(\d+)")


class GitHubUnavailable(UsageError):
    """GitHub's API could not be read; the reads file is left as it was."""


def _repo(read: UpstreamRead) -> str:
    match = _REPO.match(read.url)
    if match is None:
        raise ValueError(f"{read.id}: {read.url} is not a GitHub issue or pull request URL")
    return match.group(1)


def _date(stamp: str | None) -> str:
    return (stamp or "")[:10]


def _release_name(tag: str) -> str:
    return tag[1:] if re.match(r"v\d", tag) else tag


def _first_release(repo: str, sha: str, merged_at: str, fetch: Fetch) -> tuple[str, str]:
    """(first release containing sha, how it was established), from the releases published after the merge."""
    releases = [r for r in fetch(f"repos/{repo}/releases?per_page=100")
                if not r.get("draft") and not r.get("prerelease") and (r.get("published_at") or "") >= merged_at]
    releases.sort(key=lambda r: r.get("published_at") or "")
    for release in releases[:MAX_TAGS_COMPARED]:
        tag = release["tag_name"]
        status = fetch(f"repos/{repo}/compare/{tag}...{sha}").get("status")
        if status in ("behind", "identical"):  # the tag already contains the merge commit
            return _release_name(tag), f"GitHub compare API: {tag} contains merge commit {sha[:9]} (status {status})"
    return "", f"no release published after the merge contains {sha[:9]} (compared {min(len(releases), MAX_TAGS_COMPARED)})"


def _closing_pr(repo: str, number: int, fetch: Fetch) -> str:
    """The PR whose merge closed an issue ('owner-project#N'), from the issue's 'closed' event; '' when none."""
    closed = [e for e in fetch(f"repos/{repo}/issues/{number}/events?per_page=100") if e.get("event") == "closed"]
    if not closed or not closed[-1].get("commit_id"):
        return ""
    pulls = fetch(f"repos/{repo}/commits/{closed[-1]['commit_id']}/pulls")
    return f"{repo.split('/')[1]}#{pulls[0]['number']}" if pulls else ""


def refresh_one(read: UpstreamRead, fetch: Fetch, today: str) -> UpstreamRead:
    """One issue/PR read anew. Pure over `fetch`."""
    repo = _repo(read)
    if read.kind == "pr":
        pull = fetch(f"repos/{repo}/pulls/{read.number}")
        merged_at = pull.get("merged_at") or ""
        state = "merged" if merged_at else pull.get("state", "open")
        first, first_how = read.first_release, read.first_release_how
        if merged_at and pull.get("merge_commit_sha"):
            first, first_how = _first_release(repo, pull["merge_commit_sha"], merged_at, fetch)
        return dataclasses.replace(
            read, title=pull.get("title", read.title), state=state, as_of=today,
            closed_at=_date(merged_at or pull.get("closed_at")), closed_by="", first_release=first,
            first_release_how=first_how, how=f"GitHub REST API: pulls/{read.number}, releases, compare")
    issue = fetch(f"repos/{repo}/issues/{read.number}")
    state = issue.get("state", "open")
    closed_by = _closing_pr(repo, read.number, fetch) if state == "closed" else ""
    return dataclasses.replace(
        read, title=issue.get("title", read.title), state=state, as_of=today, closed_at=_date(issue.get("closed_at")),
        closed_by=closed_by, how=f"GitHub REST API: issues/{read.number}" + (", events, commits/pulls" if state == "closed" else ""))


def refresh(reads: tuple[UpstreamRead, ...], fetch: Fetch, today: str) -> tuple[UpstreamRead, ...]:
    """Every issue and PR read anew (code and document reads kept). Pure over `fetch`."""
    return tuple(refresh_one(r, fetch, today) if r.kind in ("issue", "pr") else r for r in reads)


def _version_order(text: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        return Version("0")


def live_fetch(path: str, timeout: float = 20.0) -> Any:
    """GET https://api.github.com/<path> (JSON); GitHubUnavailable with one line when it cannot be read."""
    request = urllib.request.Request(API + path, headers={"Accept": "application/vnd.github+json",
                                                          "User-Agent": "pcgkit-advice-refresh"})
    token = os.environ.get("GITHUB_TOKEN")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - a fixed https host
            return json.loads(response.read().decode("utf-8"))
    except (urllib.error.URLError, TimeoutError, OSError, json.JSONDecodeError) as exc:
        raise GitHubUnavailable(f"GitHub API unreachable for {path.split('?')[0]}: {exc}; "
                                f"fixtures/upstream_reads.json left unchanged") from exc


def replay_path(path: str) -> str:
    """The recorded-response file name for an API path: query dropped, '.json' added. Pure."""
    return path.split("?", 1)[0].strip("/") + ".json"


def replay_fetch(folder: Path) -> Fetch:
    """A fetch over recorded responses under `folder` (replay_path names them); a missing one is an error."""
    def fetch(path: str) -> Any:
        target = folder / replay_path(path)
        if not target.is_file():
            raise GitHubUnavailable(f"no recorded response for {path} (expected {target})")
        return json.loads(target.read_text())
    return fetch
