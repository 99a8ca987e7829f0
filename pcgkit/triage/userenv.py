"""The user's own environment for a personal answer: versions and GPU from the kit's env capture. Pure: no I/O.

`pcgkit triage LOG --env ENV.json` (a `pcgkit env --json` capture) or `--python ENV` (the command
captures that interpreter) combines the log with what is installed where it crashed. The capture
wins over versions the log prints (the log may be from another machine); either may be missing.
"""

from __future__ import annotations

import dataclasses
import re

from pcgkit.triage.facts import Fact, fact
from pcgkit.util import untrusted


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
        gpu = f"{self.gpu} ({self.arch})" if self.gpu else self.arch
        if not parts:
            return "not known" + (f"; GPU {gpu}" if gpu else "") + f" [from {self.source}]"
        return ", ".join(parts) + (f", {gpu}" if gpu else "") + f" [from {self.source}]"


def from_capture(capture: dict, source: str) -> UserEnv:
    """A `pcgkit.env/1` capture as a UserEnv; a simulated device gives no arch (it is not the user's GPU).
    Every field it reads is typed (pcgkit.util.untrusted): a wrong one is an UntrustedValueError naming it."""
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
    return UserEnv("the log", fact(facts, "sglang"), fact(facts, "flashinfer"), fact(facts, "torch"),
                   _arch(fact(facts, "compute_capability")), fact(facts, "gpu"))


_VERSION_RE = re.compile(r"^v?\d+\.\d+(?:\.\d+)?(?:\.?post\d+|rc\d+|\.dev\d+)?(?:\+[\w.]+)?$")


class BadVersion(ValueError):
    """A --sglang/--flashinfer/--torch/--arch value that is not a release or an architecture."""


def arch_name(text: str) -> str:
    """'sm_121a' / 'SM121' / '12.1' / '121' -> 'sm121'; BadVersion for anything else. Pure."""
    raw = text.strip().lower().replace("_", "")
    digits = raw.removeprefix("sm").rstrip("afx")
    major, dot, minor = digits.partition(".")
    if dot and major.isdigit() and minor.isdigit():
        return f"sm{major}{minor}"
    if not dot and digits.isdigit() and len(digits) >= 2:
        return f"sm{digits}"
    raise BadVersion(f"--arch {text}: not an architecture (give sm120, sm121 or a compute capability such as 12.1)")


def _arch(capability: str | None) -> str | None:
    """arch_name's 'sm120' for a capture's or a log's '12.0' / 'sm_120a' / '120'; None where it names none."""
    try:
        return arch_name(capability) if capability else None
    except BadVersion:
        return None


def from_flags(sglang: str | None, flashinfer: str | None, torch: str | None, arch: str | None) -> UserEnv | None:
    """The release the user names on the command line (no environment needed); None when none is named. Pure."""
    named = {"--sglang": sglang, "--flashinfer": flashinfer, "--torch": torch}
    for flag, value in named.items():
        if value is not None and not _VERSION_RE.match(value.strip()):
            raise BadVersion(f"{flag} {value}: not a release (e.g. 0.5.11, 0.6.8.post1, 2.9.1)")
    if not any(named.values()) and arch is None:
        return None
    given = " ".join(f"{flag} {value}" for flag, value in (*named.items(), ("--arch", arch)) if value)
    clean = {k: v.strip().lstrip("v") if v else None for k, v in named.items()}
    return UserEnv(given, clean["--sglang"], clean["--flashinfer"], clean["--torch"], arch_name(arch) if arch else None)


def merged(user: UserEnv, log: UserEnv) -> UserEnv:
    """The capture's values, the log's where the capture has none."""
    taken = [name for name in ("sglang", "flashinfer", "torch", "arch")
             if getattr(log, name) and not getattr(user, name)]
    source = user.source + (f"; {', '.join(taken)} from {log.source}" if taken else "")
    return UserEnv(source, user.sglang or log.sglang, user.flashinfer or log.flashinfer, user.torch or log.torch,
                   user.arch or log.arch, user.gpu or log.gpu)
