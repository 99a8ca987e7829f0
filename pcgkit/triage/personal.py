"""The personal answer: this diagnosis on the user's own versions, first on the screen. Pure: no I/O.

Three lines a crashed user needs before any evidence: are you affected on your versions, the switch
for YOUR release, and the smallest upgrade that fixes it. Each says where it comes from (the log,
fixtures/upstream.toml's dated links, each release's own parser as validated by the kit).
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from pcgkit.triage.advice import KitData, switch_for
from pcgkit.triage.diagnose import Diagnosis, Kind
from pcgkit.triage.userenv import UserEnv

_PACKAGE_OF = {"sglang": "sglang", "flashinfer-python": "flashinfer"}


def _version(text: str | None) -> Version | None:
    try:
        return Version(text) if text else None
    except InvalidVersion:
        return None


def _fixes(user: UserEnv, data: KitData) -> list[tuple[dict, Version | None]]:
    """Each fixed-in fact with the user's version of that package (None: unknown)."""
    return [(fix, _version(getattr(user, _PACKAGE_OF.get(fix["package"], ""), None)))
            for fix in data.upstream.get("fixed_in", ())]


def _link(data: KitData, ids: list[str]) -> str:
    by_id = {link["id"]: link["url"] for link in data.upstream.get("link", ())}
    urls = [by_id[i] for i in ids if i in by_id]
    return f" [{', '.join(urls)}]" if urls else ""


def personal_answer(diagnosis: Diagnosis, user: UserEnv, data: KitData) -> tuple[str, ...]:
    """affected / not affected on the user's versions, their release's switch, the upgrade path. Pure."""
    lines = [f"your environment: {user.line()}"]
    fixes = _fixes(user, data)
    # SGLang's own dense NVFP4 call is the path a server takes: its fix decides a server user's answer.
    server_fix = next(((f, v) for f, v in fixes if f.get("scope") == "sglang-path"), None)
    if diagnosis.kind is Kind.KNOWN_BUG:
        lines.append("AFFECTED: your log shows this bug" + (f" ({diagnosis.mode})" if diagnosis.mode else ""))
    elif server_fix is not None and server_fix[1] is not None:
        fix, have = server_fix
        if have >= Version(fix["version"]):
            lines.append(f"NOT AFFECTED through SGLang's own call: sglang {have} has the fix ({fix['what']})"
                         + _link(data, fix.get("links", [])))
        elif user.arch and not user.arch.startswith("sm12"):
            lines.append(f"not affected on this GPU ({user.arch}): the bug needs an SM120-family GPU (RTX 50xx, "
                         f"RTX PRO 6000, DGX Spark); sglang {have} would be affected there")
        else:
            lines.append(f"AFFECTED on your versions with an NVFP4 model and piecewise CUDA graphs on SM120: sglang {have} "
                         f"is older than {fix['version']}" + _link(data, fix.get("links", [])))
    else:
        lines.append("affected: unknown (no SGLang version in the log or the environment; pass --env or --python)")
    sglang = _version(user.sglang)
    if sglang is not None and data.flags and (diagnosis.kind is Kind.KNOWN_BUG or diagnosis.piecewise != "captured"):
        lines.append("switch for your release: " + switch_for(data.flags, sglang)[0]
                     + f" (fixtures/{data.upstream['piecewise_off']['source_file']})")
    for fix, have in fixes:
        if have is not None and have < Version(fix["version"]):
            lines.append(f"upgrade: {fix['package']} {have} -> {fix['version']}: {fix['what']}" + _link(data, fix.get("links", [])))
    return tuple(lines)
