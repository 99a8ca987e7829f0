"""What to do about a diagnosis, from the kit's data files only (no advice typed in code).

- fixtures/upstream.toml: links, fixed-in releases, the workaround's cost, the dead ends;
- fixtures/sglang_launch_validation.json: each validated SGLang release's own piecewise flags
  (pcgkit.sglang.facts.PiecewiseFlags), so the switch that turns piecewise off is per release;
- fixtures/matrix_snapshot.json: the kit's newest matrix, verdicts per version (simulated: said);
- pcgkit.catalog: each dead end's workaround wording.
`load_data()` reads the files; `advise()` is pure.
"""

from __future__ import annotations

import dataclasses
import json

import tomllib
from packaging.version import InvalidVersion, Version

from pcgkit import resources
from pcgkit.catalog import entry
from pcgkit.sglang.facts import PiecewiseFlags, flags_from_validation
from pcgkit.triage.diagnose import Diagnosis, Kind
from pcgkit.triage.facts import Fact, fact


@dataclasses.dataclass(frozen=True)
class KitData:
    upstream: dict
    snapshot: dict
    flags: tuple[PiecewiseFlags, ...]  # one per validated SGLang release, oldest first


def load_data() -> KitData:
    upstream = tomllib.loads(resources.fixture("upstream.toml").read_text())
    snapshot = json.loads(resources.fixture("matrix_snapshot.json").read_text())
    validation = json.loads(resources.fixture(upstream["piecewise_off"]["source_file"]).read_text())
    flags = sorted(flags_from_validation(validation), key=lambda f: _version(f.sglang) or Version("0"))
    return KitData(upstream, snapshot, tuple(flags))


def _version(text: str | None) -> Version | None:
    try:
        return Version(text) if text else None
    except InvalidVersion:
        return None


def _link_urls(upstream: dict, ids: list[str]) -> list[str]:
    by_id = {link["id"]: link["url"] for link in upstream.get("link", ())}
    return [by_id[i] for i in ids if i in by_id]


def switch_for(flags: tuple[PiecewiseFlags, ...], sglang: Version | None) -> list[str]:
    """The switch that turns piecewise off: for the release found, else per range of validated releases."""
    if sglang is not None and flags:
        older = [f for f in flags if (_version(f.sglang) or Version("0")) <= sglang] or [flags[0]]
        chosen = older[-1]
        return [f"SGLang {sglang} (flags as validated on {chosen.sglang}): " + _switch_text(chosen)]
    lines, start, previous = [], None, None
    for f in flags:
        text = _switch_text(f)
        if text != (previous and _switch_text(previous)):
            if previous is not None:
                lines.append(f"SGLang {start}-{previous.sglang}: {_switch_text(previous)}")
            start = f.sglang
        previous = f
    if previous is not None:
        lines.append(f"SGLang {start}-{previous.sglang}: {_switch_text(previous)}")
    return lines


def _switch_text(flags: PiecewiseFlags) -> str:
    if flags.default_state == "opt-in" and flags.enable and not flags.disable:
        return f"piecewise is opt-in: drop {flags.enable} from the launch"
    if flags.default_state == "not-shipped":
        return "no torch.compile piecewise backend in this release: nothing to turn off"
    state = "on by default" if flags.default_state == "on-by-default" else flags.default_state
    return f"add {flags.disable} ({state})"


def _matrix(snapshot: dict, facts: tuple[Fact, ...], mode: str | None) -> list[str]:
    """What the newest matrix says for the versions in the log (the nearest SGLang cell when only it is known)."""
    wanted = {"sglang": fact(facts, "sglang"), "flashinfer-python": fact(facts, "flashinfer"), "torch": fact(facts, "torch")}
    cells = snapshot.get("cells", [])
    matching = [c for c in cells if any(v and c.get(k) == v for k, v in wanted.items())]
    label = "simulated SM120" if snapshot.get("simulated") else "real hardware"
    head = f"kit matrix of {str(snapshot.get('matrix_created', '?'))[:10]} ({label})"
    if not matching:
        found = ", ".join(f"{k} {v}" for k, v in wanted.items() if v) or "no versions in the log"
        return [f"{head}: no cell for {found}; see the full matrix with `pcgkit matrix`"]
    out = []
    for cell in matching[:3]:
        modes = [mode] if mode in cell["verdicts"] else ["mode1", "sglang-compile-sm120", "fix-upstream-op"]
        verdicts = ", ".join(f"{m} {cell['verdicts'][m]}" for m in modes if m in cell["verdicts"])
        versions = f"sglang {cell['sglang'] or '-'} / flashinfer {cell['flashinfer-python']} / torch {cell['torch']}"
        out.append(f"{head}: cell {cell['id']} ({versions}): {verdicts}")
    return out


def _fixed_in(upstream: dict, facts: tuple[Fact, ...]) -> list[str]:
    out = []
    found = {"sglang": _version(fact(facts, "sglang")), "flashinfer-python": _version(fact(facts, "flashinfer"))}
    for fix in upstream.get("fixed_in", ()):
        have = found.get(fix["package"])
        where = "" if have is None else (" (the log's version has it)" if have >= Version(fix["version"])
                                         else f" (the log shows {have}: older)")
        urls = _link_urls(upstream, fix.get("links", []))
        out.append(f"{fix['package']} >= {fix['version']}: {fix['what']}{where}" + (f" [{', '.join(urls)}]" if urls else ""))
    return out


def _dead_ends(upstream: dict, snapshot: dict) -> list[str]:
    out = []
    for dead in upstream.get("dead_end", ()):
        case = entry(dead["case"])
        tried = case.workaround if case is not None else dead["case"]
        verdicts = sorted({c["verdicts"].get(dead["case"]) for c in snapshot.get("cells", [])} - {None, "error", "skipped"})
        measured = f"; matrix: {'/'.join(verdicts)}" if verdicts else ""
        out.append(f"{tried}: {dead['outcome']} ({dead['case']}{measured})")
    return out


@dataclasses.dataclass(frozen=True)
class Advice:
    workaround: tuple[str, ...]
    cost: str
    fixed_in: tuple[str, ...]
    dead_ends: tuple[str, ...]
    matrix: tuple[str, ...]
    links: tuple[str, ...]
    next_steps: tuple[str, ...]

    def to_dict(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}


def next_steps(diagnosis: Diagnosis) -> tuple[str, ...]:
    """The kit's commands that turn this triage into a report (the case to export follows the mode)."""
    mode = diagnosis.mode if diagnosis.mode in ("mode1", "mode2", "mode3", "mode4") else "mode1"
    return (
        "pcgkit env --json --out env.json            # the environment, for the report",
        f"pcgkit repro {mode} --real --out repro-{mode}    # a standalone script of this failure (--simulate without SM120)",
        f"pcgkit issue --target flashinfer --env env.json --repro repro-{mode}  # the issue draft",
    )


def advise(diagnosis: Diagnosis, facts: tuple[Fact, ...], data: KitData) -> Advice | None:
    """What to do; None when the log does not show this bug or a related one. Pure."""
    if diagnosis.kind not in (Kind.KNOWN_BUG, Kind.RELATED):
        return None
    off = data.upstream["piecewise_off"]
    return Advice(
        workaround=tuple(switch_for(data.flags, _version(fact(facts, "sglang")))),
        cost=off.get("cost", "unknown"),
        fixed_in=tuple(_fixed_in(data.upstream, facts)),
        dead_ends=tuple(_dead_ends(data.upstream, data.snapshot)),
        matrix=tuple(_matrix(data.snapshot, facts, diagnosis.mode)),
        links=tuple(_link_urls(data.upstream, [link["id"] for link in data.upstream.get("link", ())])),
        next_steps=next_steps(diagnosis),
    )
