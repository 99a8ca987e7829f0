"""The trace-safety certificate of a FlashInfer release, as data and as Markdown. Pure.

One certificate per (release, arch): every discovered public callable and registered op with a
status, written by `bin/pcgkit lab certify` (lab.sweep.certify) as JSON (schema
pcgkit.certificate/1). Statuses (STATUSES), one per row:

  traces        traced under fullgraph=True through torch ops only
  opaque-op     traced; the graph calls a registered op (one opaque node) -- for an op row: it traces
                as one node AND its fake executed here (FakeTensorMode on the recorded inputs), agreeing
                with the real op or the op on meta tensors where those could run (opjudge.fake_ran;
                with_op_rule applies it to rows written before the rule)
  breaks        does not trace; `sites` lists every untraceable site met, in order (lab.sweep.unroll)
  fake-missing  a registered op without a fake (register_fake / abstract impl / Meta kernel)
  fake-drift    a registered op whose fake disagrees with the real op (or opcheck fails)
  not-judged    no inputs (the signature does not say enough and no spec gives them), set-up
                that needs a GPU, or the kit could not build the call: the reason is on the row

`table(certificates)` is the per release x arch count table with each certificate's coverage (written by the
builder, lab.sweep.coverage), `diff(older, newer)` what became traceable, what broke, what appeared and
disappeared between two releases of the same arch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from pcgkit.values.verdict import Verdict

SCHEMA = "pcgkit.certificate/1"
# What `fake_vs_real` starts with once the op's fake EXECUTED here (FakeTensorMode returned on the recorded inputs):
# compared with the real op, with the op on meta tensors, or with nothing that could run here. Anything else
# ("fake raised ...", "", an older row's "not run here: the real op raised ...") is a fake that did not run.
FAKE_RAN = ("agrees", "drift", "not run here: nothing ran on")
FAKE_DID_NOT_RUN = "traced as one node, but its fake did not execute here"


def fake_ran(fake_vs_real: str | None) -> bool:
    """Whether an op row's fake executed here (FAKE_RAN): `opaque-op` needs it (tracing clean is not working). Pure."""
    return (fake_vs_real or "").startswith(FAKE_RAN)


# traces-but-fails is the kit's verdict word (pcgkit.values.verdict, issue 34): traced, then the call failed when run.
STATUSES = ("traces-and-runs", Verdict.TRACES_BUT_FAILS.value, "opaque-op", "breaks", "fake-missing", "fake-drift", "not-judged")
TRACED = ("traces-and-runs", "opaque-op")


def with_op_rule(cert: Mapping) -> dict:
    """The certificate with the opaque-op rule applied to every op row: `opaque-op` only where the op's fake
    executed here (fake_ran); a row written before the rule whose fake did not run is shown
    `not-judged` with the reason. Pure (a new dict; rows that pass are kept as they are)."""
    ops = []
    for row in cert.get("ops", ()):
        if row.get("status") == "opaque-op" and not fake_ran(row.get("fake_vs_real")):
            note = f"{FAKE_DID_NOT_RUN} ({(row.get('fake_vs_real') or 'not run')[:160]}): not counted opaque-op"
            row = {**row, "status": "not-judged", "note": "; ".join(t for t in (note, row.get("note", "")) if t)}
        ops.append(row)
    return {**cert, "ops": ops}


def _key(cert: Mapping) -> tuple:
    from packaging.version import Version

    return (Version(cert["flashinfer"]), cert["arch"])


def table(certificates: Iterable[Mapping]) -> list[dict]:
    """Per (release, arch): counts per status for callables and ops, and the breaks by site count."""
    rows = []
    for cert in sorted(certificates, key=_key):
        callables = Counter(r["status"] for r in cert["callables"])
        ops = Counter(r["status"] for r in cert["ops"])
        sites = Counter(len(r.get("sites", ())) for r in cert["callables"] if r["status"] == "breaks")
        rows.append({"flashinfer": cert["flashinfer"], "torch": cert["torch"], "arch": cert["arch"],
                     "device": cert["device"], "simulated": cert["simulated"], "scope": cert.get("scope", "all"),
                     "callables": dict(callables), "ops": dict(ops), "breaks_by_sites": dict(sorted(sites.items())),
                     "discovered": cert["counts"], "coverage": cert["coverage"],
                     "not_imported": len({e[0] for e in cert.get("import_errors", ()) if not e[0].startswith("op ")})})
    return rows


def _rows(cert: Mapping) -> dict[str, Mapping]:
    return {r["target"]: r for r in (*cert["callables"], *cert["ops"])}


def diff(older: Mapping, newer: Mapping) -> dict:
    """What changed from one release to the next (same arch). Pure."""
    before, after = _rows(older), _rows(newer)
    became, broke, changed = [], [], []
    for target in sorted(set(before) & set(after)):
        was, now = before[target]["status"], after[target]["status"]
        if was == now:
            if now == "breaks" and len(before[target].get("sites", ())) != len(after[target].get("sites", ())):
                changed.append({"target": target, "from": f"breaks at {len(before[target]['sites'])}",
                                "to": f"breaks at {len(after[target]['sites'])}"})
            continue
        if now in TRACED and was not in TRACED and was != "not-judged":
            became.append({"target": target, "from": was, "to": now})
        elif was in TRACED and now not in TRACED and now != "not-judged":
            broke.append({"target": target, "from": was, "to": now})
        else:
            changed.append({"target": target, "from": was, "to": now})
    return {"from": older["flashinfer"], "to": newer["flashinfer"], "arch": newer["arch"],
            "became_traceable": became, "broke": broke, "changed": changed,
            "appeared": [{"target": t, "status": after[t]["status"]} for t in sorted(set(after) - set(before))],
            "disappeared": sorted(set(before) - set(after))}


def diffs(certificates: Sequence[Mapping]) -> list[dict]:
    """Consecutive releases, per arch (whole certificates only; an ops-only GPU run is no release step)."""
    by_arch: dict[str, list[Mapping]] = {}
    for cert in sorted((c for c in certificates if c.get("scope", "all") == "all"), key=_key):
        by_arch.setdefault(cert["arch"], []).append(cert)
    return [diff(a, b) for certs in by_arch.values() for a, b in zip(certs, certs[1:])]


def plain(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _status_cells(counts: Mapping[str, int]) -> str:
    return " | ".join(str(counts.get(s, 0)) for s in STATUSES)


def render_section(certificates: Sequence[Mapping], md=plain, heading: str = "##") -> list[str]:
    """Markdown lines: the table, then each release-to-release diff with counts."""
    if not certificates:
        return []
    lines = ["", f"{heading} Trace-safety certificate: every public FlashInfer callable and registered op", "",
             "Discovered from each installed release (lab.sweep.discover); judged under torch.compile(fullgraph=True)"
             " by `bin/pcgkit lab certify`. Coverage first: what each certificate judged out of what it"
             " lists, and where the inputs came from.", "",
             "| flashinfer | arch | device | callables judged / listed | ops judged with inputs / listed |"
             " callables' inputs from | submodules not imported |", "|---|---|---|---|---|---|---|"]
    for row in table(certificates):
        cov = row["coverage"]
        sources = ", ".join(f"{k} {v}" for k, v in cov["callables judged by input source"].items()) or "-"
        lines.append(f"| {row['flashinfer']} | {row['arch']} | {md(row['device'])} | "
                     + (f"{cov['callables judged']} / {cov['callables listed']}" if row["scope"] == "all" else "- (ops only)")
                     + f" | {cov['ops judged with inputs']} / {cov['ops listed']} | {md(sources)} | {row['not_imported']} |")
    lines += ["", "| flashinfer | torch | arch | device | kind | discovered | " + " | ".join(STATUSES) + " | breaks by sites |",
             "|---" * (7 + len(STATUSES)) + "|"]
    for row in table(certificates):
        device = md(row["device"])  # "simulated sm120 on CPU" / "real: NVIDIA H200 (compute capability 9.0)"
        sites = ", ".join(f"{n} site{'s' if n != 1 else ''}: {c}" for n, c in row["breaks_by_sites"].items()) or "-"
        discovered = row["discovered"]
        if row["scope"] == "all":
            lines.append(f"| {row['flashinfer']} | {row['torch']} | {row['arch']} | {device} | callables | "
                         f"{discovered['public callables']} | {_status_cells(row['callables'])} | {sites} |")
        lines.append(f"| {row['flashinfer']} | {row['torch']} | {row['arch']} | {device} | ops | "
                     f"{discovered['registered ops']} | {_status_cells(row['ops'])} | - |")
    for d in diffs(certificates):
        lines += ["", f"{heading}# {d['from']} → {d['to']} ({d['arch']}): {len(d['became_traceable'])} became traceable,"
                  f" {len(d['broke'])} broke, {len(d['appeared'])} appeared, {len(d['disappeared'])} disappeared,"
                  f" {len(d['changed'])} changed otherwise", ""]
        for label, key in (("became traceable", "became_traceable"), ("broke", "broke"), ("changed", "changed")):
            for item in d[key][:25]:
                lines.append(f"- {label}: `{md(item['target'])}` ({md(item['from'])} → {md(item['to'])})")
            if len(d[key]) > 25:
                lines.append(f"- {label}: {len(d[key]) - 25} more (the certificates' JSON has every one)")
        appeared = Counter(item["status"] for item in d["appeared"])
        if appeared:
            lines.append("- appeared: " + ", ".join(f"{n} {s}" for s, n in sorted(appeared.items())))
    if any(c["simulated"] for c in certificates):
        lines += ["", "> Rows marked simulated traced on a CPU with the arch's hardware queries answered; no kernel was"
                  " built, loaded or run, and a pre-built loader's JIT build was simulated (lab/sweep/unroll.py); a"
                  " wrapper's constructor and plan() ran in a simulated set-up (pcgkit/sweep/setupsim.py)."]
    return lines


def compile_unsafe_calls(certificates: Iterable[Mapping], flashinfer_version: str) -> list[dict]:
    """The calls this release's whole certificates found breaking in a JIT loader (triage's `related`, the advice),
    each with its evidence (release, arch, simulated or real, date); [] claims nothing. Pure."""
    out = []
    for cert in certificates:
        if cert.get("flashinfer") != flashinfer_version or cert.get("scope", "all") != "all":
            continue
        evidence = {"flashinfer": cert["flashinfer"], "arch": cert["arch"], "simulated": cert["simulated"],
                    "device": cert["device"], "created": cert.get("created", "")}
        out += [{**entry, **evidence} for entry in cert.get("jit_loader_breaks", ())]
    return out
