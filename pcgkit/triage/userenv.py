"""The user's own environment for a personal answer: versions and GPU from the kit's env capture. Pure: no I/O.

`pcgkit triage LOG --env ENV.json` (a `pcgkit env --json` capture) or `--python ENV` (the command
captures that interpreter) combines the log with what is installed where it crashed. The capture
wins over versions the log prints (the log may be from another machine); either may be missing.
"""

from __future__ import annotations

import dataclasses

from pcgkit.triage.facts import Fact, fact


@dataclasses.dataclass(frozen=True)
class UserEnv:
    source: str  # "env.json", "--python /x/bin/python", or "the log" (versions it prints)
    sglang: str | None = None
    flashinfer: str | None = None
    torch: str | None = None
    arch: str | None = None  # "sm120" from a real GPU's compute capability; None when unknown or simulated
    gpu: str | None = None

    @property
    def known(self) -> bool:
        return any((self.sglang, self.flashinfer, self.torch))

    def line(self) -> str:
        parts = [f"{name} {value}" for name, value in
                 (("sglang", self.sglang), ("flashinfer-python", self.flashinfer), ("torch", self.torch)) if value]
        where = f", {self.gpu} ({self.arch})" if self.gpu else (f", {self.arch}" if self.arch else "")
        return (", ".join(parts) or "no versions") + where + f" [from {self.source}]"


def _arch(capability: str | None) -> str | None:
    """'12.0' -> 'sm120'."""
    if not capability or "." not in capability:
        return None
    major, minor = capability.split(".", 1)
    return f"sm{major}{minor}" if major.isdigit() and minor.isdigit() else None


def from_capture(capture: dict, source: str) -> UserEnv:
    """A `pcgkit.env/1` capture as a UserEnv; a simulated device gives no arch (it is not the user's GPU).
    Every field it reads is typed (pcgkit.util.untrusted): a wrong one is an UntrustedValueError naming it."""
    from pcgkit.util import untrusted

    if not isinstance(capture, dict):
        raise untrusted.UntrustedValueError(f"{source}: expected a JSON object, got {type(capture).__name__}")
    packages = untrusted.str_map(capture.get("packages"), f"{source}: packages")
    devices = untrusted.mapping(capture, "devices", source)
    gpus = devices.get("gpus") or []
    if not isinstance(gpus, list) or not all(isinstance(g, dict) for g in gpus):
        raise untrusted.UntrustedValueError(f"{source}: devices.gpus: expected a list of objects")
    real = [g for g in gpus if not g.get("simulated")]
    gpu = real[0] if real else None
    capability = untrusted.optional_text(gpu, "compute_capability", f"{source}: gpu") if gpu else None
    name = untrusted.optional_text(gpu, "name", f"{source}: gpu") if gpu else None
    return UserEnv(source, packages.get("sglang"), packages.get("flashinfer-python"), packages.get("torch"),
                   _arch(capability), name)


def from_facts(facts: tuple[Fact, ...]) -> UserEnv:
    """What the log itself prints, when no capture is given."""
    cc = fact(facts, "compute_capability")
    arch = None
    if cc:
        digits = cc.replace("sm_", "").replace("sm", "").replace(".", "").rstrip("afAF")
        arch = f"sm{digits}" if digits.isdigit() else None
    return UserEnv("the log", fact(facts, "sglang"), fact(facts, "flashinfer"), fact(facts, "torch"), arch, fact(facts, "gpu"))


def merged(user: UserEnv, log: UserEnv) -> UserEnv:
    """The capture's values, the log's where the capture has none."""
    return UserEnv(user.source, user.sglang or log.sglang, user.flashinfer or log.flashinfer, user.torch or log.torch,
                   user.arch or log.arch, user.gpu or log.gpu)
