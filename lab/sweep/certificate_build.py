"""What the certificate builder (lab.sweep.certify) writes into a certificate, beside the reader's rules
(pcgkit.sweep.certificate): a judged callable's status, the JIT-loader breaks it lists, the scrub that keeps
committed data free of this host's paths, and the page (certificate-X-arch.md). Pure."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from lab.sweep.coverage import ARCH_REASON, ARCH_REFUSAL, coverage, not_judged_reason
from pcgkit.sweep.certificate import plain
from pcgkit.values.verdict import Verdict

# The sweep classes of a callable that breaks under fullgraph.
BREAKS = ("breaks-in-jit-loader", "breaks-elsewhere", "fake-reaches-kernel")


# What a failed fake run says when FlashInfer's own argument checks refused the inputs: the inputs
# were wrong for this callable, which says nothing about compile safety (lab.sweep.fakerun).
INPUT_REJECTIONS = ("ValueError", "AssertionError", "IndexError", "KeyError", "NotImplementedError", "TypeError")


# Dynamo's graph-break id for an exception the traced code raised itself and nothing caught ("Dynamo found no
# exception handler at the top-level compiled function"): the release's own check ran under the trace.
RAISED_UNDER_TRACE = "gb0088"
# A run that stopped for the kit's own reasons (a kernel the guard refused, the time limit): it says nothing
# about whether the call raises by itself.
KIT_STOPS = ("KernelLoadRefused", "CaseTimeout")


def judged_status(first_class: str, where: str, runs: bool, run_error_type: str, run_error: str,
                  first_break: str = "") -> tuple[str, str]:
    """(status, where) of a judged callable from its first trace's sweep class and its fake run. Pure.

    traced (through / an opaque op) and the fake run returned -> traces-and-runs / opaque-op;
    traced but the run raised -> traces-but-fails, unless the release's argument checks rejected
    the inputs (INPUT_REJECTIONS) -> not-judged; a first trace that broke -> breaks (the sites are
    on the row), unless its first break (`first_break`, the graph-break id) is the release's own code
    raising under the trace (RAISED_UNDER_TRACE) and the eager run raised too (not a kit stop): "x must be a
    CUDA tensor", "requires compute capability 10.0", "does not support backend": the inputs or the host
    were refused, eagerly as under the trace, which says nothing about compile safety -> not-judged; a break
    whose eager run met the release's arch refusal (ARCH_REFUSAL: "requires SM100 or SM103") -> not-judged: the
    callable cannot run on this arch at all, so its sites are no verdict for it here (they stay on the row); a
    simulation gap or set-up the kit could not do -> not-judged with the reason."""
    if (first_class in BREAKS and first_break == RAISED_UNDER_TRACE and not runs and run_error_type
            and run_error_type not in KIT_STOPS):
        return "not-judged", f"the release's own check raised, under the trace and when run: {run_error[:160]}"
    if first_class in BREAKS and not runs and run_error_type not in KIT_STOPS and ARCH_REFUSAL.search(run_error or ""):
        return "not-judged", f"the release's own check refused this arch when run (the trace broke first): {run_error[:160]}"
    if first_class in ("traces-through", "opaque-op"):
        if runs:
            return ("opaque-op" if first_class == "opaque-op" else "traces-and-runs"), where
        if run_error_type in INPUT_REJECTIONS:
            return "not-judged", f"traced, but the release rejected the derived inputs when run: {run_error[:160]}"
        return Verdict.TRACES_BUT_FAILS.value, f"traced; the fake run raised {run_error[:160]}"
    if first_class in BREAKS:
        return "breaks", where
    if first_class == "error" and not runs and run_error_type in INPUT_REJECTIONS:
        return "not-judged", f"the release rejected the inputs: {run_error[:160]}"
    return "not-judged", where


def jit_loader_breaks(callables: Sequence[Mapping]) -> list[dict]:
    """The callables whose first trace under fullgraph broke inside a lazy JIT loader: what triage's
    `related` diagnosis and the advice read ("this FlashInfer call is not compile-safe"). Pure."""
    return [{"target": r["target"], "loader": r.get("loader", ""),
             "where": (r.get("sites") or [{}])[0].get("frame") or r.get("where", ""), "sites": len(r.get("sites", ()))}
            for r in callables if r["status"] == "breaks" and r.get("first_class") == "breaks-in-jit-loader"]


_ADDRESS = re.compile(r" at 0x[0-9a-f]+")  # object reprs: differ on every run
# An install root: a venv's site-packages, or the GPU run's `pip install --target /tmp/site`.
_INSTALL_PREFIX = re.compile(r"(?:/[^\s'\"(),\[\]]+)?/(?:site|dist)-packages/|/tmp/site/")
# A home cache (FlashInfer's JIT folder, the kit's certificate environments): '/root/.cache/x' -> '~/.cache/x'.
_HOME_CACHE = re.compile(r"(?<!~)(?:/[^\s'\"(),\[\]]+)?/\.cache/")  # idempotent: '~/.cache/' stays
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # a DSL's coloured error text: escape codes are not evidence


def scrub(value):
    """The certificate without this host's install paths, home caches, object addresses and colour codes
    ('/x/.venv/lib/python3.12/site-packages/flashinfer/..' -> 'flashinfer/..', '/root/.cache/flashinfer/..' ->
    '~/.cache/flashinfer/..'): committed data must read the same from any machine. Pure."""
    if isinstance(value, str):
        return _ANSI.sub("", _HOME_CACHE.sub("~/.cache/", _ADDRESS.sub("", _INSTALL_PREFIX.sub("", value))))
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    return value


def render_certificate(cert: Mapping, md=plain) -> str:
    """One certificate as a page: the counts, then every row (breaking ones with their sites)."""
    lines = [f"# Trace-safety certificate: flashinfer {cert['flashinfer']} ({cert['arch']}, "
             f"{'simulated' if cert['simulated'] else 'real'}: {md(cert['device'])})", "",
             f"- torch {cert['torch']}; created {cert.get('created', '?')}; wall {cert.get('wall_s', '?')} s"]
    cov = cert.get("coverage") or coverage(cert["callables"], cert["ops"])
    lines += ["", "## Coverage", ""] + [f"- {name}: " + (", ".join(f"{k} {v}" for k, v in n.items()) or "-" if isinstance(n, dict) else str(n))
                                        for name, n in cov.items()]
    arch = [r for r in cert["callables"] if r["status"] == "not-judged" and not_judged_reason(r) == ARCH_REASON]
    if arch:
        lines += ["", f"## Refused on this arch by the release ({len(arch)}: not judgeable on {cert['arch']})", ""]
        lines += [f"- `{md(r['target'])}`: {md(r.get('on_fake_cuda') or r.get('where', ''))[:200]}" for r in arch]
    lines += ["", "## Discovered", ""] + [f"- {name}: {n}" for name, n in cert["counts"].items()]
    lines += [f"- note: {md(cert['note'])}"] if cert.get("note") else []
    if cert.get("jit_loader_breaks"):
        lines += ["", "## Breaks in a JIT loader under fullgraph (first site)", ""]
        lines += [f"- `{md(e['target'])}` ({e['loader']}): `{md(e['where'])}`" for e in cert["jit_loader_breaks"]]
    if cert.get("import_reasons"):
        lines += ["", "## Submodules that did not import", "", "| submodule | reason | detail | error |", "|---|---|---|---|"]
        lines += [f"| `{md(r['submodule'])}` | {r['reason']} | {md(r['detail'])} | {md(r['error'])[:100]} |"
                  for r in cert["import_reasons"]]
    lines += ["", "## Callables", "", "| target | status | inputs from | sites | final / where | fake run |", "|---|---|---|---|---|---|"]
    for r in cert["callables"]:
        run = r.get("run") or {}
        ran = "" if not run else ("returned " + md(run.get("outputs", ""))[:40] if run.get("runs") else md(run.get("error", ""))[:60])
        lines.append(f"| `{md(r['target'])}` | {r['status']} | {r.get('inputs_from', '')} | {len(r.get('sites', ()))} |"
                     f" {md(r.get('where', ''))[:120]} | {ran} |")
    lines += ["", "## Registered ops", "", "| op | status | fake | inputs from | fake vs real | note |", "|---|---|---|---|---|---|"]
    for r in cert["ops"]:
        # a str value read from the release's code is shown with the line that names it
        read = "; ".join(f"{name} = {v['value']} ({v['from']})" for name, v in ((r.get("call") or {}).get("str_values") or {}).items())
        inputs = md(r.get("inputs_from", "")) + (f": {md(read)}" if read else "")
        lines.append(f"| `{md(r['target'])}` | {r['status']} | {'yes' if r['has_fake'] else 'no'} | {inputs} |"
                     f" {md(r.get('fake_vs_real', ''))[:100]} | {md(r.get('note', ''))[:100]} |")
    unrolled = [r for r in cert["callables"] if r.get("sites")]
    if unrolled:
        lines += ["", "## Unrolled stacks (every site, in order)", ""]
        for r in unrolled:
            lines.append(f"### `{md(r['target'])}`")
            if r.get("setup_simulated"):
                lines.append("set-up (simulated): " + "; ".join(md(item) for item in r["setup_simulated"]))
                lines.append("")
            if r.get("inputs_device"):  # judged again on the simulated cuda:0 after the release refused CPU inputs
                lines.append(f"inputs on {md(r['inputs_device'])}; on CPU inputs: {md(r.get('on_cpu_inputs', ''))[:160]}")
                lines.append("")
            lines += [f"{s['index']}. `{md(s['frame'])}` [{s['graph_break_id'] or '-'}] {md(s['what'])[:120]} → "
                      + (f"stop: {md(s['note'])[:200]}" if s["action"] == "stop" else
                         f"{s['action']}{' (simulated)' if s['simulated'] else ''} `{md(s['patched'])}`")
                      for s in r["sites"]]
            lines.append("")
    return "\n".join(lines) + "\n"
