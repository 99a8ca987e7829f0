"""Preflight case -- a team's SGLang launch (a launch file), answered in this environment: would piecewise
capture crash? The same probe and answer as `pcgkit preflight` (pcgkit/preflight/), run in every matrix cell
by `pcgkit matrix --preflight FILE`. Opt-in: without a launch file (PCGKIT_PREFLIGHT) nothing is reported.
Issue 30; pcgkit/preflight/case.py has the verdict mapping.
"""

import os

import pytest

from pcgkit.catalog import Family, modes_of
from pcgkit.preflight.case import ENV_VAR, PREFLIGHT_LAUNCH, reproduce

if not os.environ.get(ENV_VAR):
    pytest.skip(f"opt-in: `pcgkit matrix --preflight FILE` sets {ENV_VAR}", allow_module_level=True)


def test_preflight_launch(pcgkit_case, target):
    """The team's launch, preflighted in this environment: reproduced (would crash) / not-applicable / skipped (a launch that only traces: traced only, never fixed)."""
    pcgkit_case.run(PREFLIGHT_LAUNCH, lambda ctx: reproduce(ctx, modes_of(Family.FAILURE)))


test_preflight_launch.pcgkit_mode = PREFLIGHT_LAUNCH
