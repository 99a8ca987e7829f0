"""Short templates over the one Answer (pcgkit.advice.answer): every surface prints these and decides nothing. Pure.

- `answer_lines(answer)`: one line per question (affected, this launch, pass first, turn off, cost, fixed in, safe
  call), each ending in its sources' kind and date (`tag`): what `advice show`, `triage` and `preflight` print;
- `release_row(answer)`: one row of the per-release table (compat.md, docs/answers.md); the README box's row and
  the cost table's Markdown are docs/gen_facts.py's, their only reader.
Each line starts with its question's label (QUESTIONS): the agreement check (tests/test_agreement.py) reads them back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pcgkit.advice.answer import Answer
from pcgkit.advice.cost import COST_PAGE, CostTable
from pcgkit.advice.values import AFFECTED, CELLS, MEASUREMENT, NOT_AFFECTED, PARSER, Statement

# The questions, as each surface labels its line (and the agreement check reads them back).
AFFECTED_Q, LAUNCH_Q, PASS_Q, OFF_Q, COST_Q, FIXED_Q, SAFE_Q = (
    "affected", "this launch", "pass first", "turn off", "cost", "fixed in", "safe call")
FIRST_TRY_COST = "first try's cost"  # an indented line under `cost:` (printed without its label)
FIRST_TRY_RUN = "first try ran"  # an indented line under `pass first:`: what the first try did on the lent GPU
QUESTIONS = (AFFECTED_Q, LAUNCH_Q, PASS_Q, FIRST_TRY_RUN, OFF_Q, COST_Q, FIRST_TRY_COST, FIXED_Q, SAFE_Q)
STATE_WORDS = {AFFECTED: "yes", NOT_AFFECTED: "no"}
_KIND_WORDS = {CELLS: "matrix", PARSER: "wheel", MEASUREMENT: "measured"}  # an upstream read: its ref (sglang#23386)


def tag(*statements: Statement | None) -> str:
    """'[wheel 2026-12-05; matrix 2026-12-05, simulated]': each source's kind and date, in a few words. Pure."""
    said = [s for s in statements if s is not None]
    if not said:
        return ""
    by_kind: dict[str, list[str]] = {}
    for source in (source for s in said for source in s.sources):
        dates = by_kind.setdefault(_KIND_WORDS.get(source.kind) or source.ref.split(" ")[0], [])
        if source.as_of not in dates:
            dates.append(source.as_of)
    kinds = "; ".join(f"{kind} {', '.join(dates)}" for kind, dates in by_kind.items())
    return f" [{kinds}{', simulated' if any(s.simulated for s in said) else ''}]"


def state_words(state: str | None) -> str:
    return STATE_WORDS.get(state or "", "unknown")


def pass_words(answer: Answer) -> str:
    """What to pass first, in a few words (the same words on every surface). Pure."""
    if answer.first_try:
        return f"`{answer.first_try}`"
    if answer.state == NOT_AFFECTED:
        return "nothing (not affected)"
    if answer.turn_off:
        return "none in this release (turn off)"
    return "nothing (opt-in)" if answer.turn_on else "nothing (not shipped)" if answer.switch else "not read"


def off_words(answer: Answer) -> str:
    if answer.turn_off:
        return f"`{answer.turn_off}`"
    return f"do not pass `{answer.turn_on}`" if answer.turn_on else "nothing (not shipped)"


def fixed_words(answer: Answer) -> str:
    project = "SGLang" if answer.versions.sglang else "FlashInfer"
    return f"{project} {answer.fixed_in} (its call path ran)" if answer.fixed_in else f"no measured {project} release"


def answer_lines(answer: Answer, questions: tuple[str, ...] = QUESTIONS) -> list[str]:
    """One line per question asked (a sub-line, indented, belongs to the question above it), its sources' kind and
    date at the end. Pure."""
    who = f"SGLang {answer.versions.sglang}" if answer.versions.sglang else answer.versions.describe()
    where = answer.arch.upper() if answer.arch else "an unknown architecture"
    said: list[tuple[str, str]] = [(AFFECTED_Q, f"{state_words(answer.state)} ({who} on {where}){tag(answer.affected)}")]
    if answer.launch is not None:
        said.append((LAUNCH_Q, f"{answer.launch.text}{tag(answer.launch)}"))
    if answer.switch is not None:
        runner = f"; {answer.runner.text}" if answer.runner is not None else ""
        said.append((PASS_Q, f"{pass_words(answer)}{runner}{tag(answer.switch, answer.runner)}"))
        if answer.first_try_run is not None:
            said.append((FIRST_TRY_RUN, f"  {answer.first_try_run.text}{tag(answer.first_try_run)}"))
        said.append((OFF_Q, f"{off_words(answer)}{tag(answer.switch)}"))
    if answer.cost is not None and answer.table is not None:
        said.append((COST_Q, f"{worst_words(answer.table)}; {COST_PAGE}{tag(answer.cost)}"))
    if answer.first_try_cost is not None:
        said.append((FIRST_TRY_COST, f"  {answer.first_try_cost.text}{tag(answer.first_try_cost)}"))
    if answer.fixed_in or answer.upgrade is not None:
        said.append((FIXED_Q, f"{fixed_words(answer)}{tag(answer.upgrade or answer.affected)}"))
    if answer.safe_call is not None:
        said.append((SAFE_Q, f"{answer.safe_call.text}{tag(answer.safe_call)}"))
    if answer.certificate is not None:  # the FlashInfer release's own calls that are not compile-safe
        said.append((SAFE_Q, f"  {answer.certificate.text}{tag(answer.certificate)}"))
    return [text if text.startswith("  ") else f"{question}: {text}" for question, text in said if question in questions]


def worst_words(table: CostTable) -> str:
    """'up to 80 % slower with piecewise off (4 prompts of 128 tokens at once, 8.03 B ..., NVIDIA H200, SGLang 0.5.12)'."""
    return f"up to {table.worst} ({table.worst_case}, {table.device}, SGLang {table.sglang})"


def release_row(answers: list[Answer], span: str) -> str:
    """'| 0.5.11 | yes | `--enable-breakable-cuda-graph` | `--disable-piecewise-cuda-graph` |'. Pure."""
    first = answers[0]
    states = "/".join(dict.fromkeys(state_words(a.state) for a in answers))
    return f"| {span} ({states}) | {pass_words(first)} | {off_words(first)} |"


def what_to_pass(answer: Answer) -> str:
    """Both what-to-pass answers in one cell, for the README's short table. Pure."""
    if answer.state == NOT_AFFECTED:
        return "nothing (not affected)"
    if answer.first_try:
        return f"first try {pass_words(answer)}; turn off: {off_words(answer)}"
    if answer.turn_off:
        return f"turn off: {off_words(answer)}"
    return f"nothing; {off_words(answer)}"


def group_rows(answers: Sequence[Answer], row: Callable[[list[Answer], str], str], key: Callable[[Answer], str],
               span: Callable[[tuple[str, ...]], str]) -> list[str]:
    """One row per run of consecutive releases whose `key` reads the same; `span` names the run's releases. Pure."""
    groups: list[list[Answer]] = []
    for answer in answers:
        if groups and key(groups[-1][0]) == key(answer):
            groups[-1].append(answer)
        else:
            groups.append([answer])
    return [row(group, span(tuple(a.versions.sglang or "?" for a in group))) for group in groups]


def range_words(releases: tuple[str, ...]) -> str:
    """'0.5.11' or '0.5.12-0.5.23'. Pure."""
    return releases[0] if len(releases) == 1 else f"{releases[0]}-{releases[-1]}"


def per_release_lines(answers: Sequence[Answer]) -> list[str]:
    """'SGLang 0.5.11: first try `...`; turn off: `...`' per run of releases with the same what-to-pass. Pure."""
    return group_rows(answers, lambda group, span: f"SGLang {span}: {what_to_pass(group[0])}", what_to_pass, range_words)


RELEASE_HEAD = ["| SGLang (affected on SM120?) | pass first | turn off |", "|---|---|---|"]

