"""The sweep -- every FlashInfer entry point in pcgkit/sweep/entry_points.toml under
torch.compile(fullgraph=True), per arch, as cases of the kit's catalog (`sweep.<arch>.<entry>`).

Opt-in (about 100 cases, ~80 s per environment on CPU): runs only when PCGKIT_SWEEP is set
(`PCGKIT_SWEEP=1 pcgkit run`, `PCGKIT_SWEEP=sm120 pcgkit matrix ...`). On the simulated target each
arch's hardware queries are answered as that family and the no-kernel guard holds
(pcgkit/sweep/guard.py); on a real GPU the arch matching the device runs with nothing simulated.
Verdicts: pcgkit/sweep/classify.py (VERDICT_OF_CLASS). Issue 19.
"""

import pytest

from pcgkit.sweep.cases import enabled_arches
from pcgkit.sweep.pytest_case import run_case
from pcgkit.sweep.specs import load_specs

ARCHES = enabled_arches()
if not ARCHES:
    pytest.skip("the sweep is opt-in: set PCGKIT_SWEEP=1 (or PCGKIT_SWEEP=sm120,sm90)", allow_module_level=True)
SPECS = load_specs()


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
@pytest.mark.parametrize("arch", ARCHES)
def test_sweep_entry(request, target, arch, spec):
    """One FlashInfer entry point traced under fullgraph=True for one arch: verdict + sweep class."""
    run_case(request, target, arch, spec)
