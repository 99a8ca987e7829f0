"""Render the docs' generated blocks from the kit's own data: `python docs/gen_facts.py [--check]`.

Each block sits between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->` in a Markdown file
and is rewritten from data, never by hand:
- `have-this-bug` (README.md): a short table of the one answer per SGLang release (pcgkit.advice.every_release,
  rendered by pcgkit.advice.render) and one line per other answer, linking docs/answers.md;
- `answers`, `cost`, `threads` (docs/answers.md): the whole answer per release, the cost tables, the upstream threads;
- `error-strings` and `bug-facts` (docs/check-environment.md): the error strings users see (from the seed-derived
  server logs in tests/data/e2e_logs/) and a link to docs/answers.md;
- `workaround-cost` (docs/gpu-and-ci.md): the cost in one line;
- `exit-codes` (docs/reference/exit-codes.md): the PcgkitError classes of pcgkit.errors;
- `precedence` (same page): pcgkit.values.targets.PRECEDENCE;
- `packages` (docs/reference/layout.md): each package's __init__ docstring;
- `catalog` (docs/reference/cases.md): pcgkit.catalog.CATALOG;
- `samples` (reports/samples/README.md): reports/samples/INDEX.toml, every committed sample with what reads it
  and its one regeneration command.
`--check` rewrites nothing and exits 1 naming the stale blocks, and every committed sample that is not indexed,
is read by no page or bar, or names a script that does not exist (tests/test_docs.py runs it).
Everything but `main` is pure over the data it is handed, or reads only the kit's data files.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import fnmatch
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

import tomllib  # noqa: I001

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere: the checkout's pcgkit, not an installed one
    sys.path.insert(0, str(ROOT))

from pcgkit import advice, catalog, errors  # noqa: E402
from pcgkit.advice import render as answer_render  # noqa: E402
from pcgkit.advice import summary  # noqa: E402
from pcgkit.advice.cost import CostTable  # noqa: E402
from pcgkit.util.ranges import measured_ranges, version_key  # noqa: E402
from pcgkit.values import targets  # noqa: E402

E2E_LOGS = ROOT / "tests" / "data" / "e2e_logs"
SAMPLES = ROOT / "reports" / "samples"
CLI = "bin/pcgkit"  # the one spelling of the command in the docs (see README "Conventions")

_BLOCK = re.compile(r"(<!-- generated:(?P<name>[a-z-]+) -->\n)(?P<body>.*?)(<!-- /generated:(?P=name) -->)", re.S)


# --- error strings ------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ErrorString:
    exception: str  # the exception line as the log prints it
    detail: str  # what it names: the skipped builtin, or "" when the head says it all
    flashinfer_files: tuple[str, ...]  # FlashInfer files in the traceback, innermost last


_EXC = re.compile(r"^(torch\._dynamo\.exc\.\w+: .+)$", re.M)
_BUILTIN = re.compile(r"trace the builtin `(.+?)\.?`")
_FI_FRAME = re.compile(r'File ".*?/(flashinfer/[\w/]+\.py)", line \d+')
_WARNING = re.compile(r"WARNING (Dynamo detected a call to a `functools\.lru_cache`-wrapped function)")


def error_strings(logs: dict[str, str]) -> tuple[list[ErrorString], list[str]]:
    """The dynamo failures (and warnings) that the seed logs show, in first-seen order. Pure."""
    found: list[ErrorString] = []
    warnings: list[str] = []
    for text in logs.values():
        for chunk in re.split(r"(?=Scheduler hit an exception)", text):
            exc = _EXC.search(chunk)
            if exc is None:
                continue
            builtin = _BUILTIN.search(chunk)
            files = tuple(dict.fromkeys(_FI_FRAME.findall(chunk)))
            item = ErrorString(exc.group(1).strip(), builtin.group(1) if builtin else "", files)
            if item not in found:
                found.append(item)
        for warning in _WARNING.findall(text):
            if warning not in warnings:
                warnings.append(warning)
    return found, warnings


def seed_logs() -> dict[str, str]:
    """The server logs built from the seed documents (tests/data/e2e_logs/INDEX.toml, source = seed)."""
    index = tomllib.loads((E2E_LOGS / "INDEX.toml").read_text())
    files = dict.fromkeys(entry["file"] for entry in index["log"] if entry["source"] == "seed")
    return {name: (E2E_LOGS / name).read_text() for name in files}


def _code(text: str) -> str:
    """A Markdown code span that survives backticks inside the text."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


# --- the one answer per release, the cost, where it is fixed, upstream states (all from pcgkit.advice) ------

ANSWERS_PAGE = "docs/answers.md"  # the one page that gives every release's answer and the cost table whole


def sglang_releases_in_range() -> tuple[str, ...]:
    """The SGLang releases of the matrix range (fixtures/matrix.toml + the pins cache), oldest first."""
    from pcgkit.matrix.pins import load_pins
    from pcgkit.matrix.plan import axis_releases, load_matrix

    return axis_releases(load_matrix(), load_pins()).get("sglang", ())


def _span(releases: tuple[str, ...], in_range: tuple[str, ...] = ()) -> str:
    """The row's releases as a range over the ones read only, the releases between them not read named
    (pcgkit.util.ranges). Pure."""
    return measured_ranges(in_range, releases)


def release_rows(answers: tuple[advice.Answer, ...], in_range: tuple[str, ...],
                 row: Callable[[list[advice.Answer], str], str] = answer_render.release_row,
                 key: Callable[[advice.Answer], str] | None = None) -> list[str]:
    """One table row per run of consecutive releases whose answer reads the same (or whose `key` is the same: the
    row then names each state of the run), spans over the releases read (pcgkit.advice.render.group_rows). Pure."""
    return answer_render.group_rows(answers, row, key or (lambda a: row([a], "")), lambda rs: _span(rs, in_range))


SHORT_HEAD = ["| SGLang | affected (SM120) | what to pass |", "|---|---|---|"]


def short_row(answers: list[advice.Answer], span: str) -> str:
    """'| 0.5.11 | yes | first try `--enable-breakable-cuda-graph`; turn off: `--disable-piecewise-cuda-graph` |'."""
    states = "/".join(dict.fromkeys(answer_render.state_words(a.state) for a in answers))
    return f"| {span} | {states} | {answer_render.what_to_pass(answers[0])} |"


def cost_table_lines(table: CostTable) -> list[str]:
    """The table as Markdown: one row per workload, one column per model, each figure's direction in words. Pure."""
    out = [f"| workload | {' | '.join(table.models)} |", "|---" * (len(table.models) + 1) + "|"]
    for row in table.rows:
        cells = [(f"**{c.words}** (worst)" if c.words.startswith(table.worst) and row.what in table.worst_case else c.words)
                 if c else "not measured" for c in row.cells]
        out.append(f"| {row.what} | {' | '.join(cells)} |")
    return out + ["", f"Worst case: {table.worst_case}, {table.worst}. Each figure against {table.baseline}, "
                      f"medians of the timed repeats; {table.where} (`{table.source}`)."]


def runner_lines(answers: tuple[advice.Answer, ...]) -> list[str]:
    """The first try's runner limits (SGLang 0.5.11's one-request prefills), each with its source. Pure."""
    return [f"{a.runner.text}{answer_render.tag(a.runner)}" for a in answers if a.runner is not None]


def first_try_lines(evidence: advice.Evidence) -> list[str]:
    """What the first try did when the kit launched it (a hybrid on SM90), per release that offers it on some GPU,
    the releases where it was not run in one line. Pure."""
    said = [a.first_try_run for r in evidence.releases
            if (a := advice.advise(advice.Versions(sglang=r.sglang), None, evidence)).first_try_run is not None]
    ran = [s for s in said if ": not run by the kit" not in s.text]
    skipped = [s.text.split(":")[0].removeprefix("First try on ") for s in said if s not in ran]
    out = [f"{s.text}{answer_render.tag(s)}" for s in ran]
    if skipped:
        out.append(f"First try on {_span(tuple(skipped), tuple(r.sglang for r in evidence.releases))}: not run by the "
                   f"kit{answer_render.tag(*said[-1:])}.")
    return out


def statement_lines(statements) -> list[str]:
    """One line per statement, its sources and dates in brackets. Pure."""
    return [f"{s.text} [{s.cite_short()}]" for s in statements]


def fixed_in_lines(evidence: advice.Evidence) -> list[str]:
    """Where the case that matters to each project's users is measured fixed (pcgkit.advice.summary). Pure."""
    return statement_lines(summary.where_fixed(evidence)) or ["No measured cell in the kit's matrix snapshot yet."]


def cost_line(evidence: advice.Evidence) -> str:
    """The cost of turning piecewise off in one line, the worst case named, the table linked. Pure."""
    cost = advice.cost_statement(evidence)
    return statement_lines([cost])[0] if cost else "not measured"


def known_threads(evidence: advice.Evidence) -> list[str]:
    """The upstream issues and PRs the kit cites, each with its state as read and the date. Pure."""
    return [s.text for s in summary.upstream_states(evidence)]


# --- renderers ----------------------------------------------------------------------------------

Spelling = tuple[str, str]  # (the file that defines fp4_quantize, the FlashInfer releases read that have it there)


def fp4_spellings() -> tuple[tuple[Spelling, ...], str]:
    """Where each FlashInfer release defines fp4_quantize (fixtures/flashinfer_releases.json, read from each wheel),
    as (path, release range) pairs, and the provenance line for the box."""
    import json

    import lab.flashinfer_releases as fi
    from pcgkit import resources

    data = json.loads(resources.fixture(fi.TABLE_FILE).read_text())
    table = fi.parse_table(data, f"fixtures/{fi.TABLE_FILE}")
    in_range = sorted({r.flashinfer for r in table} | set(data.get("not_read", {})), key=version_key)
    pairs = tuple((path, measured_ranges(in_range, found)) for path, found in fi.spellings(table))
    read_on = max((r.read_on for r in table), default="never")
    unread = f"; not read (no wheel here): {', '.join(data['not_read'])}" if data.get("not_read") else ""
    return pairs, f"`fixtures/{fi.TABLE_FILE}`, each release's wheel read {read_on}{unread}"


def _frame(path: str, spellings: tuple[Spelling, ...]) -> str:
    """A FlashInfer file as the user's release spells it: every spelling of the fp4 module, with its releases. Pure."""
    if spellings and path in {p for p, _ in spellings}:
        return " or ".join(f"{_code(p)} (FlashInfer {releases})" for p, releases in spellings)
    return _code(path)


def render_error_list(found: list[ErrorString], warnings: list[str], prefix: str = "",
                      spellings: tuple[Spelling, ...] = ()) -> list[str]:
    """One bullet per error string (and the warning that often precedes them); the fp4 module's frame in every
    spelling FlashInfer releases have it (`spellings`). Pure."""
    out = []
    for item in found:
        named = f" naming {_code(item.detail)}" if item.detail else ""
        where = (f", frames in {', '.join(_frame(f, spellings) for f in item.flashinfer_files)}"
                 if item.flashinfer_files else "")
        out.append(f"{prefix}- {_code(item.exception)}{named}{where}")
    out += [f"{prefix}- often after the warning {_code(w)}" for w in warnings]
    return out


def render_bug_box(answers: tuple[advice.Answer, ...], evidence: advice.Evidence, in_range: tuple[str, ...]) -> str:
    """The README's "Have this bug?" box: a short table, then one line per answer, the rest on ANSWERS_PAGE. Pure."""
    newest = answers[-1]
    table = evidence.cost_table
    out = ["> **Have this bug?** (\"Capture piecewise CUDA graph\" dies with dynamo's `Unsupported` in FlashInfer's "
           "`fp4_quantize`: [messages](docs/check-environment.md#1-is-it-this-bug-triage)) Run "
           f"`{CLI} triage server.log`.", ">", *[f"> {line}" for line in SHORT_HEAD],
           *[f"> {row}" for row in release_rows(answers, in_range, short_row, answer_render.what_to_pass)],
           ">"]
    out += [f"> - {line}" for line in runner_lines(answers)]
    out.append(f"> - Fixed in {answer_render.fixed_words(newest)}{answer_render.tag(newest.upgrade or newest.affected)}.")
    if table is not None:
        out.append(f"> - Cost: {answer_render.worst_words(table)} ([table]({ANSWERS_PAGE}#cost))"
                   f"{answer_render.tag(advice.cost_statement(evidence))}.")
    if newest.safe_call is not None:
        out.append(f"> - Safe call: {newest.safe_call.text.split(' (')[0]}; no SGLang release calls it"
                   f"{answer_render.tag(newest.safe_call)}.")
    wheels = max((r.read_on for r in evidence.releases), default="never")
    cells = [ms.as_of for ms in evidence.measurements if ms.case == newest.case]
    out.append(f"> - Table: wheels read {wheels}; matrix {min(cells, default='?')} to {max(cells, default='?')}, "
               f"simulated. More: [{ANSWERS_PAGE}]({ANSWERS_PAGE}).")
    return "\n".join(out) + "\n"


def render_answers(rows: list[str], answers: tuple[advice.Answer, ...], evidence: advice.Evidence) -> str:
    """docs/answers.md's per-release block: the table, the runner limits, where it is fixed, the safe call. Pure."""
    generated = f"`{evidence.releases_source}`, read {max((r.read_on for r in evidence.releases), default='never')}"
    newest = answers[-1]
    out = [f"Every SGLang release in range, each read from its own wheel ({generated}); affected on SM120 from the "
           "kit's matrix cells (simulated SM120, each cell's date below).", "", *answer_render.RELEASE_HEAD, *rows, ""]
    out += [f"- {line}" for line in runner_lines(answers) + first_try_lines(evidence)]
    out += [f"- Fixed in {answer_render.fixed_words(newest)}; per project:"] + [f"  - {line}" for line in fixed_in_lines(evidence)]
    out += ([f"- Safe call: {newest.safe_call.text.split('; SGLang')[0]}; no SGLang release calls it"
             f"{answer_render.tag(newest.safe_call)}."] if newest.safe_call else [])
    return "\n".join(out) + "\n"


def render_cost(evidence: advice.Evidence, answers: tuple[advice.Answer, ...]) -> str:
    """docs/answers.md's cost block: turning piecewise off, the breakable runner, start-up, upstream's claims. Pure."""
    if evidence.cost_table is None:
        return "Not measured by the kit.\n"
    scope = evidence.read("sglang-piecewise-scope")  # which phase the graphs serve, read from SGLang's code
    out = ([f"SGLang replays piecewise CUDA graphs for prefill/extend batches only; decode runs on its regular CUDA "
            f"graphs either way ([{scope.title}]({scope.url}), read {scope.as_of}).", ""] if scope else [])
    out += ["Turning piecewise CUDA graphs off, against piecewise on (how much longer the same work took):", "",
           *cost_table_lines(evidence.cost_table)]
    limited = [a.versions.sglang for a in answers if a.runner is not None]
    for table in (t for t in (evidence.breakable_table, *evidence.breakable_by_release) if t is not None):
        runner = ("; its breakable runner serves one-request prefills only, so batches of more than one request ran "
                  "without graphs (its server log: `cuda graph: False`)" if table.sglang in limited else "")
        out += ["", f"The first try, SGLang's breakable runner, against piecewise off, measured on SGLang {table.sglang} "
                    f"({table.device}, {table.date}{runner}):", "", *cost_table_lines(table)]
    if evidence.capture:
        out += ["", evidence.capture[0].upper() + evidence.capture[1:] + "."]
    out += ["", "Upstream says, not measured by the kit:", ""]
    out += [f"- {q.text} ({q.phase}; {q.url}, read {q.as_of})" for q in evidence.cost_quotes]
    return "\n".join(out) + "\n"


def render_threads(threads: tuple[str, ...]) -> str:
    return "\n".join(f"- {line}" for line in threads) + "\n"


def _error_classes() -> list[type]:
    """Every PcgkitError class defined in pcgkit.errors, base first."""
    seen: list[type] = []
    todo: list[type] = [errors.PcgkitError]
    while todo:
        cls = todo.pop(0)
        if cls.__module__ == errors.__name__ and cls not in seen:
            seen.append(cls)
        todo.extend(cls.__subclasses__())
    return seen


def exit_code_rows() -> list[tuple[int, str, str, str]]:
    """(code, name, meaning, the error classes that exit with it), from pcgkit.errors.

    The reliability contract's `EXIT_CODES` table (code, name, meaning) is lab/exit_codes.py's.
    """
    from lab.exit_codes import EXIT_CODES

    classes = _error_classes()

    def raised_as(code: int) -> str:
        return ", ".join(f"`{c.__name__}`" for c in classes if int(c.exit_code) == code)

    return [(int(d.code), d.name, d.meaning, raised_as(int(d.code))) for d in EXIT_CODES]


def render_exit_codes(rows: list[tuple[int, str, str, str]], severity: tuple[int, ...] = ()) -> str:
    out = ["| exit code | name | meaning | raised as |", "|---|---|---|---|"]
    out += [f"| {code} | {name} | {meaning} | {classes or '(a status, not an error)'} |"
            for code, name, meaning, classes in rows]
    if severity:
        names = {code: name for code, name, _, _ in rows}
        order = " > ".join(f"{names.get(c, c)} ({c})" for c in reversed(severity))
        out += ["", f"When several apply at once, the most severe wins: {order}."]
    return "\n".join(out) + "\n"


def _target_kind(target: targets.Target) -> str:
    """What a target is, in a few words: simulated, real hardware, or the hybrid."""
    if target.simulated:
        return "simulated"
    if target.hybrid:
        return f"real GPU, SGLang/FlashInfer/dynamo architecture queries answered as {target.answered_as}"
    return "real hardware"


def render_precedence(precedence: tuple[str, ...]) -> str:
    """The statement the report's `result_for` implements (tests pin both). Pure."""
    order = ", then ".join(
        f"`{t}` ({_target_kind(targets.BY_ID[t])})" for t in precedence)
    return (f"When one cell has results for a case from several targets, the compatibility report shows one: "
            f"the first that ran (any verdict but `skipped`) in the order {order}. A real result therefore "
            f"replaces the simulated one in that cell's entry, which names its `variant` and whether it is "
            f"`simulated`; if no target ran, the entry shows the first row (a skip, with its reason). "
            f"`results.json` and the JUnit keep every target's row.\n")


def package_rows() -> list[tuple[str, str]]:
    """(package, first docstring line) for every package under pcgkit/, from its __init__.py."""
    rows = []
    for init in sorted((ROOT / "pcgkit").rglob("__init__.py")):
        package = ".".join(init.parent.relative_to(ROOT).parts)
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        rows.append((package, " ".join(doc.split("\n\n")[0].split())))
    return rows


def render_packages(rows: list[tuple[str, str]]) -> str:
    out = ["| package | what it is (its `__init__` docstring) |", "|---|---|"]
    out += [f"| `{name}` | {doc} |" for name, doc in rows]
    return "\n".join(out) + "\n"


def render_catalog(entries) -> str:
    out = ["| case id | family | module in `cases/` | title | known signature | `repro` |", "|---|---|---|---|---|---|"]
    for e in entries:
        sig = e.mode.known_signature.replace("|", "\\|")
        out.append(f"| `{e.id}` | {e.family} | `{e.case_module}` | {e.mode.title} | {sig} | "
                   f"{'yes' if e.exportable else 'no'} |")
    return "\n".join(out) + "\n"


# --- committed samples (reports/samples/INDEX.toml) ---------------------------------------------

SAMPLES_INDEX = "INDEX.toml"
SAMPLES_OWN_FILES = frozenset({SAMPLES_INDEX, "README.md"})  # the index and its rendering, not samples
MADE_ON = ("cpu", "device")


@dataclasses.dataclass(frozen=True)
class Sample:
    path: str  # under reports/samples/; a glob names a family of files
    what: str
    made_on: str  # "cpu": any checkout regenerates it; "device": only the lent GPU can
    readers: tuple[str, ...]  # files, from the checkout's root, that read or cite it
    recipe: str  # the file documenting how it was made (for "cpu" it holds `regenerate` verbatim)
    regenerate: str  # cpu: the one command; device: the device recipe in words, naming its scripts
    cost: str

    @property
    def stem(self) -> str:
        """What a reader must name: the path up to its first wildcard ("issue-" for "issue-*.md")."""
        return self.path.split("*", 1)[0]


def load_samples(index: Path = SAMPLES / SAMPLES_INDEX) -> tuple[Sample, ...]:
    """The index's entries; a missing or unknown field is a ValueError naming the entry."""
    fields = {f.name for f in dataclasses.fields(Sample)}
    samples = []
    for number, table in enumerate(tomllib.loads(index.read_text()).get("sample", []), 1):
        if set(table) != fields:
            raise ValueError(f"{index}: sample {number} ({table.get('path', '?')}): fields must be exactly "
                             f"{sorted(fields)}, differs in {sorted(set(table) ^ fields)}")
        samples.append(Sample(**{**table, "readers": tuple(table["readers"])}))
    return tuple(samples)


def _is_page_or_bar(reader: str) -> bool:
    return reader == "README.md" or reader.startswith(("docs/", "benchmarks/"))


_SCRIPT = re.compile(r"(?<![\w./$-])((?:[\w.-]+/)+[\w.-]+\.(?:sh|py))\b")  # a checkout path, not /tmp/...
_MODULE = re.compile(r"-m ((?:pcgkit|lab)(?:\.\w+)*)")
_SUBCOMMAND = re.compile(r"(?<![\w/.-])bin/pcgkit ([a-z][a-z0-9-]*)")


def command_problems(command: str, root: Path, subcommands: frozenset[str]) -> list[str]:
    """Each script, `-m pcgkit...`/`-m lab...` module or `bin/pcgkit` subcommand the command names that does not exist."""
    problems = [f"its command names {script}, which does not exist"
                for script in _SCRIPT.findall(command) if not (root / script).is_file()]
    for module in _MODULE.findall(command):
        base = root.joinpath(*module.split("."))
        if not (base.with_suffix(".py").is_file() or (base / "__main__.py").is_file()):
            problems.append(f"its command runs `-m {module}`, which does not exist")
    problems += [f"its command runs `bin/pcgkit {name}`, which is no subcommand"
                 for name in _SUBCOMMAND.findall(command) if name not in subcommands]
    return problems


def _entry_problems(sample: Sample, present: list[str], root: Path, subcommands: frozenset[str]) -> list[str]:
    problems = []
    if not any(fnmatch.fnmatchcase(name, sample.path) for name in present):
        problems.append("no such sample (remove the entry, or restore the sample)")
    if sample.made_on not in MADE_ON:
        problems.append(f"made_on is {sample.made_on!r}, not one of {MADE_ON}")
    if not any(_is_page_or_bar(reader) for reader in sample.readers):
        problems.append("no page (README.md, docs/) or bar (benchmarks/) reads it: cite it from one, or remove it")
    for reader in sample.readers:
        needle = f"reports/samples/{sample.stem}" if _is_page_or_bar(reader) else sample.stem
        if not (root / reader).is_file():
            problems.append(f"reader {reader} does not exist")
        elif needle not in (root / reader).read_text(errors="replace"):
            problems.append(f"reader {reader} no longer names {needle}")
    recipe = root / sample.recipe
    if not recipe.is_file():
        problems.append(f"recipe {sample.recipe} does not exist")
    elif sample.made_on == "cpu" and sample.regenerate not in recipe.read_text(errors="replace"):
        problems.append(f"{sample.recipe} does not document its command verbatim: {sample.regenerate}")
    return problems + command_problems(sample.regenerate, root, subcommands)


def sample_problems(samples: tuple[Sample, ...], samples_dir: Path, root: Path, subcommands: frozenset[str]) -> list[str]:
    """'WHERE: what is wrong' for every sample not indexed (or indexed twice) and every entry that fails its rules.
    Reads the files it checks; writes nothing."""
    present = sorted(p.name for p in samples_dir.iterdir() if p.name not in SAMPLES_OWN_FILES)
    rel = samples_dir.relative_to(root) if samples_dir.is_relative_to(root) else samples_dir
    problems = []
    for name in present:
        owners = [s.path for s in samples if fnmatch.fnmatchcase(name, s.path)]
        if len(owners) != 1:
            problems.append(f"{rel}/{name}: " + (f"listed {len(owners)} times ({', '.join(owners)})" if owners else
                            f"not in {SAMPLES_INDEX}: list what reads it and its one command, or remove it"))
    for sample in samples:
        problems += [f"{rel}/{SAMPLES_INDEX}: {sample.path}: {p}"
                     for p in _entry_problems(sample, present, root, subcommands)]
    return problems


def subcommands() -> frozenset[str]:
    """bin/pcgkit's subcommands, from the CLI's own parser, plus `test` (bin/pcgkit runs pytest for it) and `lab`
    (bin/pcgkit runs the workshop, lab/, for it)."""
    from pcgkit.cli import build_parser

    return frozenset({name for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction)
                      for name in action.choices} | {"test", "lab"})


def render_samples(samples: tuple[Sample, ...]) -> str:
    out = ["| sample | what it is | read by | regenerate (from the checkout's root) | made on | cost |",
           "|---|---|---|---|---|---|"]
    for s in sorted(samples, key=lambda s: s.path):
        recipe = Path(os.path.relpath(ROOT / s.recipe, SAMPLES)).as_posix()
        command = s.regenerate.replace("|", "\\|")
        how = (f"`{command}`" if s.made_on == "cpu" else f"on the lent GPU only: {command}") + f" ([how]({recipe}))"
        name = s.path if "*" in s.path else f"[{s.path}]({s.path})"
        readers = ", ".join(f"`{r}`" for r in s.readers)
        out.append(f"| {name} | {s.what} | {readers} | {how} | {s.made_on} | {s.cost} |")
    return "\n".join(out) + "\n"


# --- blocks and files ---------------------------------------------------------------------------

def blocks() -> dict[str, dict[str, Callable[[], str]]]:
    """File (relative to the checkout) -> block name -> renderer."""
    evidence = advice.load_evidence()
    answers = advice.every_release(evidence, "sm120")
    in_range = sglang_releases_in_range()
    rows = release_rows(answers, in_range)
    found, warnings = error_strings(seed_logs())
    spellings, spelled_from = fp4_spellings()
    one_line = ("The answer for each SGLang release (affected, what to pass, what turning piecewise off costs, where "
                "it is fixed, the safe call), each with its source and date: [answers.md](answers.md).\n")
    return {
        "README.md": {"have-this-bug": lambda: render_bug_box(answers, evidence, in_range)},
        "docs/answers.md": {"answers": lambda: render_answers(rows, answers, evidence),
                            "cost": lambda: render_cost(evidence, answers),
                            "threads": lambda: render_threads(tuple(known_threads(evidence)))},
        "docs/check-environment.md": {"error-strings": lambda: "\n".join(
                                          render_error_list(found, warnings, spellings=spellings)
                                          + ["", f"The file names are FlashInfer's, as each release has them "
                                                 f"({spelled_from})."]) + "\n",
                                      "bug-facts": lambda: one_line},
        "docs/reference/exit-codes.md": {"exit-codes": lambda: render_exit_codes(
                                             exit_code_rows(), tuple(int(c) for c in getattr(errors, "SEVERITY", ()))),
                                         "precedence": lambda: render_precedence(targets.PRECEDENCE)},
        "docs/reference/layout.md": {"packages": lambda: render_packages(package_rows())},
        "docs/reference/cases.md": {"catalog": lambda: render_catalog(catalog.CATALOG)},
        "docs/reference/certificate.md": {"certificate-counts": render_certificate_counts},
        "reports/samples/README.md": {"samples": lambda: render_samples(load_samples())},
        "docs/ci.md": {"nightly-cost": render_nightly_cost},
        "docs/gpu-and-ci.md": {"workaround-cost": lambda: cost_line(evidence) + "\n"},
    }


def render_nightly_cost() -> str:
    """The default plan's night with SM120 runners (pcgkit.ci.costs), derived from the committed measurements."""
    import argparse

    from lab.ci_costs import render_table
    from pcgkit.ci.plan import plan_ci
    from pcgkit.commands.ci import nightly_cost_of
    from pcgkit.matrix import pins as pins_mod
    from pcgkit.matrix.plan import DEFAULT_MATRIX_FILE, planned_cells

    cells = planned_cells(argparse.Namespace(matrix=str(DEFAULT_MATRIX_FILE), pins=str(pins_mod.DEFAULT_PINS_FILE), cell=None))
    plan = plan_ci(cells, {"sm120": ("self-hosted", "linux", "sm120")})
    return "\n".join(["`bin/pcgkit ci github --runner-labels sm120=self-hosted,linux,sm120` on the default matrix:", "",
                      *render_table(nightly_cost_of(plan))]) + "\n"


def render_certificate_counts() -> str:
    """Coverage and input sources of the committed certificates (fixtures/certificates/), then their
    status table and diffs (pcgkit.sweep.certificate.render_section), each op the matrix runs with a caller's
    arguments given the newest matrix sample's result for its release (pcgkit.report.certificate_page)."""
    import json

    from lab.sweep.derive import SOURCES
    from pcgkit.bugreport.evidence import newest_matrix
    from pcgkit.report.certificate_page import load_certificates, with_matrix_runs
    from pcgkit.report.model import from_json
    from pcgkit.sweep.certificate import render_section, table

    newest = newest_matrix(sorted((ROOT / "reports" / "samples").glob("*/compat.json")))
    certificates = with_matrix_runs(load_certificates(), from_json(json.loads(newest.compat.read_text())) if newest else None)
    out = ["| flashinfer | arch | callables judged / listed | " + " | ".join(SOURCES) + " | ops judged with inputs / listed"
           " | fake run returned | JIT-loader breaks |", "|---" * (6 + len(SOURCES)) + "|"]
    for row, cert in zip(table(certificates), sorted(certificates, key=lambda c: (version_key(c["flashinfer"]), c["arch"]))):
        cov = row["coverage"]
        whole = row["scope"] == "all"  # an ops-only run (the GPU) judged no callable
        by_source = cov["callables judged by input source"]
        sources = " | ".join(str(by_source.get(s, 0)) if whole else "-" for s in SOURCES)
        judged = f"{cov['callables judged']} / {cov['callables listed']}" if whole else "- (ops only)"
        out.append(f"| {row['flashinfer']} | {row['arch']} | {judged} | {sources} | {cov['ops judged with inputs']} / "
                   f"{cov['ops listed']} | {cov.get('callables whose fake run returned', '-') if whole else '-'} | "
                   f"{len(cert.get('jit_loader_breaks', ())) if whole else '-'} |")
    return "\n".join(out + render_section(certificates, heading="###")) + "\n"


def fill(text: str, renderers: dict[str, Callable[[], str]]) -> tuple[str, list[str]]:
    """The text with each named block re-rendered, and the names missing from the text. Pure."""
    present = {m.group("name") for m in _BLOCK.finditer(text)}

    def sub(match: re.Match) -> str:
        render = renderers.get(match.group("name"))
        return match.group(0) if render is None else match.group(1) + render() + match.group(4)

    return _BLOCK.sub(sub, text), sorted(set(renderers) - present)


def stale() -> list[str]:
    """'FILE: block NAME ...' for every block that differs from what the data says (or is missing), then every
    problem of the committed samples (sample_problems)."""
    problems = []
    for rel, renderers in blocks().items():
        text = (ROOT / rel).read_text()
        new, missing = fill(text, renderers)
        problems += [f"{rel}: no block {name!r}" for name in missing]
        if new != text:
            problems.append(f"{rel}: generated blocks are stale (run: python docs/gen_facts.py)")
    return problems + sample_problems(load_samples(), SAMPLES, ROOT, subcommands())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Render the docs' generated blocks from the kit's data.")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a block is stale or a sample breaks its rules")
    args = parser.parse_args(argv)
    if args.check:
        problems = stale()
        print("\n".join(problems) or "docs: generated blocks match the data; every sample is indexed and read")
        return 1 if problems else 0
    for rel, renderers in blocks().items():
        path = ROOT / rel
        new, missing = fill(path.read_text(), renderers)
        if missing:
            print(f"{rel}: add the markers for {missing}", file=sys.stderr)
            return 1
        path.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
