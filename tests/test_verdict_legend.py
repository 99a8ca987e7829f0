"""The verdicts' legend is declared once, whole, and every report reads it from there."""

from __future__ import annotations

from pcgkit.values.verdict import CANNOT_RUN_LEGEND, LEGEND, Verdict


def test_every_verdict_has_one_distinct_symbol_letter_and_colour():
    """A new verdict without a legend row, or two verdicts (or a verdict and the cannot-run cell state) drawn
    alike, fails here, not in a report (traces-but-fails and cannot-run were both #CC79A7 when they first met)."""
    assert list(LEGEND) == list(Verdict)
    for field in ("symbol", "letter", "colour"):
        values = [getattr(legend, field) for legend in (*LEGEND.values(), CANNOT_RUN_LEGEND)]
        assert len(set(values)) == len(values), field


def test_reports_derive_their_tables_from_the_legend():
    """The grid's symbols, the timelines' letters, the terminal's styles, the dashboard's colours and
    compat's wording are the legend's, verdict by verdict."""
    from pcgkit.report import compat, dashboard, history, model, terminal

    for verdict, legend in LEGEND.items():
        assert model.SYMBOLS[verdict.value] == legend.symbol
        assert history.VERDICT_CODES[verdict.value] == legend.letter
        assert terminal.STYLE[verdict.value] == legend.style
        assert dashboard.COLOURS[verdict.value] == legend.colour
        assert compat.VERDICT_LEGEND[verdict.value] == legend.meaning
