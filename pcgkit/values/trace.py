"""What dynamo did to one case's function: the trace outcome every judging rule reads. Pure value.

pcgkit.harness.tracing is the one place that produces it (torch.compile under a reset dynamo).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pcgkit.values.signature import Signature


@dataclasses.dataclass(frozen=True)
class TraceOutcome:
    traced: bool  # dynamo produced the graph(s) without raising
    executed: bool  # the compiled function also ran to completion (real GPU only)
    signature: Signature | None  # of the exception, when one was raised
    lru_cache_warnings: tuple[str, ...]
    graph_breaks: int | None  # dynamo's own count (only meaningful with fullgraph=False)
    graph_break_reasons: tuple[str, ...]
    duration_s: float
    output: Any = dataclasses.field(default=None, compare=False, repr=False)
