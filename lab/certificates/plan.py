"""What `bin/pcgkit lab certificates` does, as data (pure: no I/O, no processes).

The recipe (fixtures/certificates/recipe.toml) -> `Recipe`; one `Job` per chosen release: its environment
(`EnvPlan`: the folder is named by a hash of the interpreter and the requirement list, so a changed list is a new
environment), its two commands (the derived inputs, then the certificate), each run in the release's interpreter
through child.py (which records its CPU time), where their files are staged and where they are copied once both
succeeded. Then the rows: one per release, read from its certificate (`row_from_certificate`), or an error row with
its one-line reason; the table (`render_table`); and the comparison with the committed files, times aside
(`differences`)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pcgkit.errors import UsageError

CHILD = "lab.certificates.child"  # the module each command runs under, in the release's interpreter
INPUTS_TIMEOUT_S = 1800.0
CERTIFICATE_TIMEOUT_S = 3600.0  # the recipe's unroll budget plus every callable's single trace, on a loaded host
# What differs between two runs of the same code on the same release by time alone: the day (`created`, an
# upstream read's `read`), the wall clock (`wall_s`, a row's `seconds`). Everything else must be equal.
VOLATILE_KEYS = frozenset({"created", "read", "wall_s", "seconds"})


@dataclasses.dataclass(frozen=True)
class Release:
    flashinfer: str
    upstream_ref: str
    upstream_commit: str  # the prefix upstream_ref must resolve to in the mirror
    extra_requirements: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Recipe:
    python: str
    torch: str
    arch: str
    unroll_budget_s: float
    kit_extras: tuple[str, ...]
    upstream_repo: str
    releases: tuple[Release, ...]


def parse_recipe(data: Mapping[str, Any], where: str = "recipe.toml") -> Recipe:
    """The recipe file's table as values (UsageError naming the key that is missing or malformed). Pure."""
    try:
        releases = tuple(Release(str(r["flashinfer"]), str(r["upstream_ref"]), str(r["upstream_commit"]),
                                 tuple(r.get("extra_requirements", ()))) for r in data["release"])
        recipe = Recipe(str(data["python"]), str(data["torch"]), str(data["arch"]), float(data["unroll_budget_s"]),
                        tuple(data.get("kit_extras", ())), str(data["upstream_repo"]), releases)
    except KeyError as exc:
        raise UsageError(f"{where}: missing key {exc.args[0]!r}") from None
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{where}: {exc}") from None
    versions = [r.flashinfer for r in releases]
    if len(set(versions)) != len(versions):
        raise UsageError(f"{where}: a release is listed twice ({', '.join(versions)})")
    return recipe


def choose(recipe: Recipe, wanted: Sequence[str]) -> tuple[Release, ...]:
    """The releases asked for, in the recipe's order (all when none is named); UsageError for one it lacks. Pure."""
    known = {r.flashinfer: r for r in recipe.releases}
    unknown = [v for v in wanted if v not in known]
    if unknown:
        raise UsageError(f"--release {', '.join(unknown)}: not in the recipe (fixtures/certificates/recipe.toml "
                         f"lists {', '.join(known)})")
    return tuple(r for r in recipe.releases if not wanted or r.flashinfer in wanted)


@dataclasses.dataclass(frozen=True)
class EnvPlan:
    folder: Path
    python: str  # the minor version, found on the machine (pcgkit.util.interpreters)
    requirements: tuple[str, ...]

    @property
    def interpreter(self) -> Path:
        return self.folder / "bin" / "python"


def env_plan(recipe: Recipe, release: Release, kit_requirements: Sequence[str], envs_root: Path) -> EnvPlan:
    """The release's environment: the subject's pins first, then the kit's and the release's extras. Pure."""
    requirements = tuple(dict.fromkeys([f"torch=={recipe.torch}", f"flashinfer-python=={release.flashinfer}",
                                        *kit_requirements, *release.extra_requirements]))
    key = hashlib.sha256(json.dumps([recipe.python, requirements]).encode()).hexdigest()[:12]
    return EnvPlan(envs_root / f"flashinfer-{release.flashinfer}-{key}", recipe.python, requirements)


@dataclasses.dataclass(frozen=True)
class Step:
    name: str
    argv: tuple[str, ...]
    log: Path
    rusage: Path  # child.py writes the command's CPU time here
    timeout_s: float


@dataclasses.dataclass(frozen=True)
class Job:
    release: Release
    env: EnvPlan
    kit: Path  # the run's copy of the checkout's kit: PYTHONPATH and working folder of both commands
    work: Path  # the release's run folder: logs, the environment's freeze, the staged files
    steps: tuple[Step, ...]
    certificate: Path  # the staged certificate JSON the row is read from
    inputs: Path  # the staged derived inputs
    upstream: Path  # the staged upstream-tests read
    copies: tuple[tuple[Path, Path], ...]  # (staged, destination), made when every step succeeded
    committed: tuple[tuple[Path, Path], ...]  # (staged, committed) JSON files compared, times aside


KIT_PARTS = ("pcgkit", "lab", "fixtures", "cases", "docker", "pyproject.toml")  # what pcgkit.resources needs of a checkout


def kit_copy(work: Path) -> Path:
    return work / "kit"


def certificate_stem(flashinfer: str, arch: str) -> str:
    return f"certificate-{flashinfer}-{arch}"  # as `bin/pcgkit lab certify` names it (simulated, all scopes)


def plan_job(recipe: Recipe, release: Release, *, kit_requirements: Sequence[str], mirror: Path,
             out: Path, committed: Path, work: Path, envs_root: Path) -> Job:
    """One release's job: inputs into work/X/staged/inputs, the certificate into work/X/staged, both made by the
    run's copy of the kit (work/kit: an edit of the checkout during the run cannot mix in); copied to out. Pure."""
    env = env_plan(recipe, release, kit_requirements, envs_root)
    folder = work / release.flashinfer
    staged = folder / "staged"
    stem = certificate_stem(release.flashinfer, recipe.arch)
    inputs_name = f"flashinfer-{release.flashinfer}.json"
    upstream_name = f"upstream-tests-{release.upstream_ref}.json"
    child = (str(env.interpreter), "-m", CHILD)
    steps = (
        Step("inputs", (*child, str(folder / "inputs.rusage.json"), "lab", "certificate-inputs",
                        "--upstream-git", str(mirror), "--upstream-ref", release.upstream_ref,
                        "--out", str(staged / "inputs")),
             folder / "inputs.log", folder / "inputs.rusage.json", INPUTS_TIMEOUT_S),
        Step("certificate", (*child, str(folder / "certificate.rusage.json"), "lab", "certify",
                             "--arch", recipe.arch, "--unroll-budget", f"{recipe.unroll_budget_s:g}",
                             "--inputs", str(staged / "inputs" / inputs_name), "--reports", str(staged)),
             folder / "certificate.log", folder / "certificate.rusage.json", CERTIFICATE_TIMEOUT_S),
    )
    files = [f"{stem}.json", f"{stem}.md", f"inputs/{inputs_name}", f"inputs/{upstream_name}"]
    return Job(release, env, kit_copy(work), folder, steps, staged / f"{stem}.json", staged / "inputs" / inputs_name,
               staged / "inputs" / upstream_name,
               tuple((staged / name, out / name) for name in files),
               tuple((staged / name, committed / name) for name in files if name.endswith(".json")))


def plan_jobs(recipe: Recipe, wanted: Sequence[str], **where: Any) -> list[Job]:
    """Every chosen release's job, in the recipe's order (plan_job's keywords). Pure."""
    return [plan_job(recipe, release, **where) for release in choose(recipe, wanted)]


@dataclasses.dataclass(frozen=True)
class StepTime:
    name: str
    wall_s: float
    cpu_s: float | None  # user + system of the command and its children; None when it recorded none


@dataclasses.dataclass(frozen=True)
class Row:
    release: str
    status: str  # "ok" or "error"
    reason: str = ""  # an error row's one line
    callables: tuple[int, int] | None = None  # judged, listed
    ops: tuple[int, int] | None = None  # judged with inputs, listed
    sources: tuple[tuple[str, int], ...] = ()  # judged callables per input source
    env: str = ""  # "built in 95 s" / "reused"
    times: tuple[StepTime, ...] = ()
    versus: str = ""  # against the committed files, times aside

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def upstream_mismatch(release: Release, upstream: Mapping[str, Any]) -> str | None:
    """Why the tests read are not the recipe's (another commit, another repository), else None. Pure."""
    commit = str(upstream.get("commit", ""))
    if not commit.startswith(release.upstream_commit):
        return (f"upstream ref {release.upstream_ref} resolved to {commit[:12] or 'nothing'} in the mirror, "
                f"not the recipe's {release.upstream_commit}")
    return None


def row_from_certificate(release: Release, cert: Mapping[str, Any], env: str, times: Sequence[StepTime],
                         versus: str) -> Row:
    """An ok row from the certificate the run wrote; an error row when it certifies another release. Pure."""
    if cert.get("flashinfer") != release.flashinfer:
        return Row(release.flashinfer, "error", f"the environment holds flashinfer {cert.get('flashinfer')}, "
                                                f"not {release.flashinfer}", env=env, times=tuple(times))
    coverage = cert.get("coverage") or {}
    sources = coverage.get("callables judged by input source") or {}
    return Row(release.flashinfer, "ok", "",
               (int(coverage.get("callables judged", 0)), int(coverage.get("callables listed", 0))),
               (int(coverage.get("ops judged with inputs", 0)), int(coverage.get("ops listed", 0))),
               tuple(sorted((str(k), int(v)) for k, v in sources.items())), env, tuple(times), versus)


def error_reason(step: str, failure: str, output_tail: str) -> str:
    """One line: the step, how it ended, and the last line it printed that says something. Pure."""
    lines = [line.strip() for line in output_tail.splitlines() if line.strip()]
    last = next((line for line in reversed(lines) if not line.startswith("+ ")), "")
    return f"{step}: {failure}" + (f": {last[:240]}" if last else "")


def _time(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def render_table(rows: Sequence[Row]) -> str:
    """The run's Markdown table, one line per release, in the run's order. Pure."""
    names = [t.name for row in rows for t in row.times]
    steps = list(dict.fromkeys(names)) or ["inputs", "certificate"]
    head = ["flashinfer", "status", "callables judged / listed", "ops judged / listed", "judged callables' inputs from",
            "environment", *(f"{s} wall (CPU)" for s in steps), "vs committed (times aside)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        times = {t.name: t for t in row.times}
        cells = [row.release, row.status if row.status == "ok" else f"error: {row.reason}",
                 f"{row.callables[0]} / {row.callables[1]}" if row.callables else "-",
                 f"{row.ops[0]} / {row.ops[1]}" if row.ops else "-",
                 ", ".join(f"{k} {v}" for k, v in row.sources) or "-", row.env or "-",
                 *((f"{_time(times[s].wall_s)} ({_time(times[s].cpu_s)})" if s in times else "-") for s in steps),
                 row.versus or "-"]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)


def not_remade(committed_names: Sequence[str], recipe: Recipe) -> list[str]:
    """The committed certificate JSON files no release of the recipe makes (a GPU run), sorted. Pure."""
    made = {f"{certificate_stem(r.flashinfer, recipe.arch)}.json" for r in recipe.releases}
    return sorted(n for n in committed_names if n.startswith("certificate-") and n.endswith(".json") and n not in made)


def _keyed(items: Sequence[Any]) -> dict[str, Any] | None:
    """A list of rows keyed by target (how a certificate lists callables and ops), else None."""
    if items and all(isinstance(i, dict) and "target" in i for i in items):
        keys = [str(i["target"]) for i in items]
        if len(set(keys)) == len(keys):
            return dict(zip(keys, items))
    return None


def differences(old: Any, new: Any, path: str = "", volatile: frozenset[str] = VOLATILE_KEYS) -> list[str]:
    """Where two JSON documents differ, one line each, leaving out the keys that only say when or how long
    (VOLATILE_KEYS); rows with a `target` are matched by it, so one row more does not shift every later one. Pure."""
    if isinstance(old, dict) and isinstance(new, dict):
        found = []
        for key in dict.fromkeys([*old, *new]):
            if key in volatile:
                continue
            where = f"{path}.{key}" if path else str(key)
            if key not in old:
                found.append(f"{where}: added")
            elif key not in new:
                found.append(f"{where}: removed")
            else:
                found += differences(old[key], new[key], where, volatile)
        return found
    if isinstance(old, list) and isinstance(new, list):
        old_keyed, new_keyed = _keyed(old), _keyed(new)
        if old_keyed is not None and new_keyed is not None:
            return differences(old_keyed, new_keyed, path, volatile)
        if len(old) != len(new):
            return [f"{path}: {len(old)} items -> {len(new)}"]
        return [line for i, (a, b) in enumerate(zip(old, new)) for line in differences(a, b, f"{path}[{i}]", volatile)]
    if old != new:
        return [f"{path}: {json.dumps(old)[:120]} -> {json.dumps(new)[:120]}"]
    return []
