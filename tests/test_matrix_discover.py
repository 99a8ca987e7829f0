"""`bin/pcgkit lab discover`: recorded PyPI responses (tests/data/pypi, PROVENANCE.md) replayed, no network."""

from __future__ import annotations

import gzip
import io
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from lab.matrix import discover
from pcgkit.matrix.pins import load_pins
from pcgkit.matrix.plan import load_matrix, parse_matrix, plan

RECORDED = Path(__file__).parent / "data" / "pypi"
READ_ON = "2026-12-01"  # PROVENANCE.md


def recorded(name: str) -> discover.IndexProject:
    text = gzip.decompress((RECORDED / f"{name}.json.gz").read_bytes()).decode()
    return discover.parse_project(text, discover.INDEX_JSON_URL.format(name=name), READ_ON)


@pytest.fixture(scope="module")
def projects() -> dict[str, discover.IndexProject]:
    return {name: recorded(name) for name in discover.DISTRIBUTIONS}


def _matrix_without(cell_id: str) -> str:
    text = Path(load_matrix.__defaults__[0]).read_text()  # the shipped fixtures/matrix.toml
    start = text.index(f'[[cell]]\nid = "{cell_id}"')
    end = text.index("\n\n", start)
    return text[:start] + text[end + 2:]


def test_recorded_responses_parse_to_final_releases_in_version_order(projects):
    """Pre-releases and yanked-only versions are left out; 0.5.10 sorts after 0.5.9; upload dates kept."""
    torch = projects["torch"]
    versions = [r.version for r in torch.releases]
    assert versions[-1] == "2.15.0" and torch.newest().uploaded == "2026-10-28"
    assert not any("rc" in r.version for r in projects["flashinfer-python"].releases)
    sglang = [r.version for r in projects["sglang"].releases]
    assert sglang.index("0.5.10") > sglang.index("0.5.9")


def test_the_newest_torch_is_proposed_with_the_newest_flashinfer_and_why(projects):
    """Without the torch-2.15.0 cell the recorded index proposes it: no SGLang pins 2.15.0 and FlashInfer
    0.7.4 declares an unbounded `torch`, so the newest FlashInfer pairs with it, and the reason says so."""
    spec = parse_matrix(_matrix_without("torch-2.15.0"))
    found = discover.discover(projects, plan(spec, load_pins()), load_pins())
    assert [(r.version) for r in found.new["torch"]] == ["2.15.0"]
    (proposal,) = found.proposals
    assert (proposal.cell_id, proposal.flashinfer, proposal.torch) == ("torch-2.15.0", "0.7.4", "2.15.0")
    assert "declares `torch` with no version bound" in proposal.why and "paired with the newest FlashInfer" in proposal.why
    text = discover.render(found)
    assert "torch: newest in the matrix 2.14.1; newer on the index: 2.15.0 (2026-10-28)" in text
    pasted = parse_matrix('schema = "pcgkit.matrix/1"\n' + text.split("proposed by `bin/pcgkit lab discover`:")[1])
    assert pasted.cells == ({"id": "torch-2.15.0", "flashinfer-python": "0.7.4", "torch": "2.15.0"},)


def test_the_shipped_matrix_is_current_against_the_recorded_index(projects):
    """The shipped matrix has the newest sglang, flashinfer-python and torch of 2026-12-01: nothing to add."""
    cells = plan(load_matrix(), load_pins())
    found = discover.discover(projects, cells, load_pins())
    assert all(not v for v in found.new.values()) and not found.proposals
    assert "No cell to add" in discover.render(found)


def test_a_torch_that_an_sglang_release_pins_is_left_to_the_release_range(projects):
    """A new torch that an SGLang release declares is planned by [sglang_releases], not as a loose cell."""
    spec = parse_matrix('schema = "pcgkit.matrix/1"\n[[cell]]\nid = "a"\nflashinfer-python = "0.6.1"\ntorch = "2.9.1"\n')
    found = discover.discover({"torch": projects["torch"], "flashinfer-python": projects["flashinfer-python"],
                               "sglang": projects["sglang"]}, plan(spec, load_pins()), load_pins())
    assert "torch-2.14.1" not in [p.cell_id for p in found.proposals]
    assert any(n.startswith("torch 2.14.1: declared by sglang") and "0.5.23" in n for n in found.notes)


def test_an_unreachable_index_is_one_line_naming_the_url():
    """No network: a DiscoverError (exit 4) whose single line names the URL and the cause, nothing else."""
    def unreachable(request, timeout):
        return urllib.request.urlopen("http://127.0.0.1:9/", timeout=timeout)  # a real refused connection

    with pytest.raises(discover.DiscoverError) as caught:
        discover.fetch_project("torch", opener=unreachable, timeout=5)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("https://pypi.org/pypi/torch/json: cannot reach the package index")
    assert caught.value.exit_code == 4


def test_a_non_json_answer_is_refused_in_one_line():
    """A captive portal's HTML (or any non-API body) is an error that says so, not a crash."""
    def portal(request, timeout):
        return io.BytesIO(b"<html>sign in</html>")

    with pytest.raises(discover.DiscoverError, match="not a PyPI JSON API response"):
        discover.fetch_project("torch", opener=portal)


def test_an_http_error_names_the_status():
    """A 404 from the index is reported with its status, in one line."""
    def missing(request, timeout):
        raise urllib.error.HTTPError(request.full_url, 404, "Not Found", {}, None)

    with pytest.raises(discover.DiscoverError, match="HTTP 404 Not Found"):
        discover.fetch_project("no-such-project", opener=missing)


def test_cli_discover_replays_saved_responses(capsys):
    """`bin/pcgkit lab discover --index-json DIR` reads saved responses, says so, and runs nothing."""
    from lab.cli import main

    assert main(["discover", "--index-json", str(RECORDED)]) == 0
    out = capsys.readouterr().out
    assert "a saved https://pypi.org/pypi/torch/json" in out and "No cell to add" in out
