"""`bin/pcgkit lab discover`: releases on the package index newer than the matrix, and the cells to add.

Reading the index is the one networked step (`fetch_project`: PyPI's JSON API through urllib, with
a timeout and a one-line error when the index cannot be reached). Everything else is pure: parse a
project's JSON (`parse_project`), compare with the planned cells and the SGLang pins cache
(`discover`), and say it as text with the proposed cells as TOML to paste into fixtures/matrix.toml
(`render`). A proposed pairing follows the declared requirements: an SGLang release that pins the
new version decides it (then [sglang_releases] plans it once `bin/pcgkit lab pins` caches the release);
otherwise FlashInfer's declared torch range; when nothing declares the pair, the newest FlashInfer,
and the proposal says so.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from pcgkit.errors import EnvironmentSetupError
from pcgkit.matrix.cells import Cell
from pcgkit.matrix.pins import PinsIndex, parse_subject_pins
from pcgkit.util.ranges import version_key

INDEX_JSON_URL = "https://pypi.org/pypi/{name}/json"
# The axes the matrix varies, as the index names them, in the order the listing shows them.
DISTRIBUTIONS: tuple[str, ...] = ("sglang", "flashinfer-python", "torch")
FETCH_TIMEOUT_S = 30.0
# Ask the index for JSON; say who asks (PyPI asks API clients to identify themselves).
_HEADERS = {"Accept": "application/json", "User-Agent": "pcgkit-matrix-discover"}


@dataclasses.dataclass(frozen=True)
class IndexRelease:
    version: str
    uploaded: str  # ISO date of the first file's upload, "" when unknown


@dataclasses.dataclass(frozen=True)
class IndexProject:
    name: str  # canonical
    releases: tuple[IndexRelease, ...]  # final releases with at least one file not yanked, oldest first
    latest: str  # what the index calls the newest version (info.version)
    latest_requires: tuple[str, ...]  # that version's Requires-Dist (the JSON API gives no other's)
    url: str  # where it was read
    read_on: str  # ISO date of the read

    def newer_than(self, version: str | None) -> tuple[IndexRelease, ...]:
        floor = version_key(version) if version else None
        return tuple(r for r in self.releases if floor is None or version_key(r.version) > floor)

    def newest(self) -> IndexRelease | None:
        return self.releases[-1] if self.releases else None


class DiscoverError(EnvironmentSetupError):
    hint = "check that PyPI is reachable (or pass --index-json DIR with saved <name>.json responses)"


def _final(version: str) -> bool:
    try:
        parsed = Version(version)
    except InvalidVersion:
        return False
    return not (parsed.is_prerelease or parsed.is_devrelease)


def parse_project(text: str, url: str, read_on: str) -> IndexProject:
    """A PyPI JSON API body -> its final releases that have a file not yanked, oldest first. Pure."""
    try:
        data = json.loads(text)
        info, files_by_version = data["info"], data["releases"]
        name = canonicalize_name(info["name"])
    except (ValueError, KeyError, TypeError) as exc:
        raise DiscoverError(f"{url}: not a PyPI JSON API response ({type(exc).__name__}: {exc})") from exc
    releases = []
    for version, files in files_by_version.items():
        live = [f for f in files or () if not f.get("yanked")]
        if live and _final(version):
            uploaded = min(str(f.get("upload_time_iso_8601") or f.get("upload_time") or "") for f in live)[:10]
            releases.append(IndexRelease(version, uploaded))
    releases.sort(key=lambda r: version_key(r.version))
    return IndexProject(name, tuple(releases), str(info.get("version", "")),
                        tuple(info.get("requires_dist") or ()), url, read_on)


Opener = Callable[..., object]


def fetch_project(name: str, opener: Opener = urllib.request.urlopen, timeout: float = FETCH_TIMEOUT_S,
                  today: str | None = None) -> IndexProject:
    """Read one project from PyPI's JSON API (the edge). DiscoverError, one line, when it cannot."""
    url = INDEX_JSON_URL.format(name=name)
    try:
        with opener(urllib.request.Request(url, headers=_HEADERS), timeout=timeout) as response:  # type: ignore[attr-defined]
            body = response.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        raise DiscoverError(f"{url}: the index answered HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise DiscoverError(f"{url}: cannot reach the package index ({reason})") from None
    return parse_project(body, url, today or _dt.date.today().isoformat())


# ---- what is new, and the cells to add (pure) -------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Proposal:
    cell_id: str
    flashinfer: str
    torch: str
    why: str  # which declared requirement decided the pairing, with its source
    existing: str = ""  # a planned cell that already installs this pair ("" when none)

    def toml(self) -> str:
        lines = [f"# {line}" for line in _wrap(self.why)]
        return "\n".join([*lines, "[[cell]]", f'id = "{self.cell_id}"', f'flashinfer-python = "{self.flashinfer}"',
                          f'torch = "{self.torch}"'])


@dataclasses.dataclass(frozen=True)
class Discovery:
    newest_in_matrix: Mapping[str, str | None]  # per distribution, the newest version a planned cell installs
    new: Mapping[str, tuple[IndexRelease, ...]]  # per distribution, index releases newer than that
    uncached_sglang: tuple[str, ...]  # SGLang releases on the index the pins cache does not know
    proposals: tuple[Proposal, ...]
    notes: tuple[str, ...]
    sources: tuple[tuple[str, str], ...]  # (url, read_on) of every index response used


def _wrap(text: str, width: int = 96) -> list[str]:
    words, lines, line = text.split(), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return lines + ([line] if line else [])


def _newest(values) -> str | None:
    present = [v for v in values if v]
    return max(present, key=version_key) if present else None


def _torch_spec(requires: Sequence[str]) -> SpecifierSet | None:
    """The unconditional torch requirement's specifier among Requires-Dist lines; None when none is declared."""
    for line in requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) == "torch" and (req.marker is None or "extra" not in str(req.marker)):
            return req.specifier
    return None


def _declaring_sglang(index: PinsIndex, latest: IndexProject | None, axis: str, version: str) -> list[str]:
    """SGLang releases (pins cache, and the index's newest release) whose declared exact pin on `axis` is `version`."""
    found = [r.version for r in index.releases if (p := r.pins.get(axis)) is not None and p.version == version]
    if latest is not None and latest.latest and latest.latest not in found:
        pin = parse_subject_pins(latest.latest_requires).get(axis)
        if pin is not None and pin.version == version:
            found.append(latest.latest)
    return found


def _existing(cells: Sequence[Cell], flashinfer: str, torch: str) -> str:
    return next((c.id for c in cells if c.flashinfer == flashinfer and c.torch == torch and not c.sglang), "")


def _propose_torch(release: IndexRelease, projects: Mapping[str, IndexProject], index: PinsIndex,
                   cells: Sequence[Cell]) -> tuple[Proposal | None, str]:
    sglang = projects.get("sglang")
    declaring = _declaring_sglang(index, sglang, "torch", release.version)
    if declaring:
        return None, (f"torch {release.version}: declared by sglang {', '.join(declaring)}; [sglang_releases] plans "
                      "those releases once `bin/pcgkit lab pins` has cached them")
    flashinfer = projects.get("flashinfer-python")
    newest_fi = flashinfer.newest() if flashinfer else None
    if flashinfer is None or newest_fi is None:
        return None, f"torch {release.version}: FlashInfer's releases were not read; no pairing proposed"
    spec = _torch_spec(flashinfer.latest_requires) if flashinfer.latest == newest_fi.version else None
    source = f"{flashinfer.url}, read {flashinfer.read_on}"
    if spec is not None and str(spec) and not spec.contains(release.version, prereleases=True):
        return None, (f"torch {release.version}: flashinfer-python {newest_fi.version} declares torch{spec}, which "
                      f"excludes it, and no SGLang release pins it; no pairing proposed ({source})")
    if spec is None:
        said = f"flashinfer-python {newest_fi.version}'s torch requirement was not read"
    elif not str(spec):
        said = f"flashinfer-python {newest_fi.version} declares `torch` with no version bound"
    else:
        said = f"flashinfer-python {newest_fi.version} declares torch{spec}, which admits it"
    why = (f"torch {release.version} (uploaded {release.uploaded or 'on an unknown date'}): no SGLang release declares it "
           f"and {said} ({source}); nothing declares this pair, so it is paired with the newest FlashInfer")
    proposal = Proposal(f"torch-{release.version}", newest_fi.version, release.version, why,
                        _existing(cells, newest_fi.version, release.version))
    return proposal, ""


def _propose_flashinfer(release: IndexRelease, projects: Mapping[str, IndexProject], index: PinsIndex,
                        cells: Sequence[Cell]) -> tuple[Proposal | None, str]:
    sglang = projects.get("sglang")
    declaring = _declaring_sglang(index, sglang, "flashinfer-python", release.version)
    if declaring:
        return None, (f"flashinfer-python {release.version}: declared by sglang {', '.join(declaring)}; "
                      "[sglang_releases] plans those releases once `bin/pcgkit lab pins` has cached them")
    # FlashInfer pins no torch: pair with the torch the newest SGLang release declares (the newest pair in use).
    newest_sglang = index.releases[-1] if index.releases else None
    torch_pin = newest_sglang.pins.get("torch") if newest_sglang else None
    if newest_sglang is None or torch_pin is None:
        return None, f"flashinfer-python {release.version}: no SGLang release's torch pin is cached; no pairing proposed"
    why = (f"flashinfer-python {release.version} (uploaded {release.uploaded or 'on an unknown date'}): no SGLang "
           f"release declares it; paired with torch {torch_pin.version}, which the newest cached SGLang release "
           f"({newest_sglang.version}) declares")
    return Proposal(f"fi-{release.version}", release.version, torch_pin.version, why,
                    _existing(cells, release.version, torch_pin.version)), ""


def discover(projects: Mapping[str, IndexProject], cells: Sequence[Cell], index: PinsIndex) -> Discovery:
    """What the index has that the matrix does not, and the cells that would cover it. Pure."""
    newest = {
        "sglang": _newest(c.sglang for c in cells),
        "flashinfer-python": _newest(c.flashinfer for c in cells),
        "torch": _newest(c.torch for c in cells),
    }
    new = {name: projects[name].newer_than(newest[name]) for name in DISTRIBUTIONS if name in projects}
    cached = {r.version for r in index.releases}
    floor = index.releases[0].version if index.releases else None
    uncached = tuple(r.version for r in (projects["sglang"].newer_than(floor) if "sglang" in projects else ())
                     if r.version not in cached)
    proposals: list[Proposal] = []
    notes: list[str] = []
    for name, propose in (("flashinfer-python", _propose_flashinfer), ("torch", _propose_torch)):
        for release in new.get(name, ()):
            proposal, note = propose(release, projects, index, cells)
            if proposal is not None:
                proposals.append(proposal)
            if note:
                notes.append(note)
    for version in new.get("sglang", ()):
        notes.append(f"sglang {version}: `bin/pcgkit lab pins` caches its declared pins; the "
                     "[sglang_releases] range (to = \"newest\") then plans its cell")
    sources = tuple((p.url, p.read_on) for p in projects.values())
    return Discovery(newest, new, uncached, tuple(proposals), tuple(notes), sources)


def render(found: Discovery) -> str:
    """The listing a person reads, then the cells to paste as TOML. Pure."""
    lines = ["Package index read: " + "; ".join(f"{url} ({day})" for url, day in found.sources)]
    for name in DISTRIBUTIONS:
        if name not in found.new:
            continue
        newer = found.new[name]
        have = found.newest_in_matrix.get(name) or "none"
        listed = ", ".join(f"{r.version} ({r.uploaded})" for r in newer) if newer else "none"
        lines.append(f"{name}: newest in the matrix {have}; newer on the index: {listed}")
    if found.uncached_sglang:
        lines.append("sglang releases the pins cache does not know (run `bin/pcgkit lab pins`): "
                     + ", ".join(found.uncached_sglang))
    lines += [f"- {note}" for note in found.notes]
    fresh = [p for p in found.proposals if not p.existing]
    for p in found.proposals:
        if p.existing:
            lines.append(f"- {p.cell_id}: already planned as cell {p.existing} (same pins)")
    if not fresh:
        lines.append("No cell to add: the matrix covers every release the index has on its axes.")
        return "\n".join(lines) + "\n"
    lines += ["", f"# Cells to add to fixtures/matrix.toml ({len(fresh)}), proposed by `bin/pcgkit lab discover`:", ""]
    lines += ["\n\n".join(p.toml() for p in fresh)]
    return "\n".join(lines) + "\n"
