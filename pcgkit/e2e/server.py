"""One server run: start, wait for readiness or death, one /generate request, stop the process group.

The log stays on disk as the run's artifact; the verdict is made from it by pcgkit.e2e.logclass.
Only loopback addresses are ever contacted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import random
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from pcgkit.util import proc
from pcgkit.values.verdict import Word

HEALTH_PATH = "/health"
GENERATE_PATH = "/generate"
LOOPBACK = "127.0.0.1"


class Readiness(Word):
    READY = "ready"  # /health answered 200
    DIED = "died"  # the server's leader process exited before it was ready
    TIMED_OUT = "timed-out"  # neither, within the readiness timeout


@dataclasses.dataclass(frozen=True)
class Generation:
    ok: bool
    detail: str  # the generated text when ok, else why the request failed
    duration_s: float


@dataclasses.dataclass(frozen=True)
class ServerRun:
    """What happened to one launched server; the log itself stays in the file at log_path."""

    argv: tuple[str, ...]
    log_path: Path
    readiness: Readiness
    waited_s: float  # until ready, death or the timeout
    exit_status: int | None  # the leader's status when it died by itself, else None
    generation: Generation | None  # only asked when ready
    # Processes of the server's session / process group still alive after stop(), as "pid:name:state";
    # None when the check was not made (a run recorded before it existed).
    group_left: tuple[str, ...] | None = None

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["log_path"] = str(self.log_path)
        data["readiness"] = self.readiness.value
        return data


# Below the usual ephemeral ranges (Linux 32768-60999) so that --port + 10000 (SGLang's gRPC port) is a
# valid port: a kernel-chosen ephemeral port killed about one launch in five (FACTS.md, 2026-12-01).
PORT_FLOOR = 20000
PORT_CEILING = 65535


class NoFreePortError(RuntimeError):
    """No port in the window had all of its derived ports free."""


def port_window(offsets: tuple[int, ...], floor: int = PORT_FLOOR) -> range:
    """The --port values whose every derived port (port + offset) is a valid port number. Pure."""
    return range(floor, PORT_CEILING - max(offsets, default=0) + 1)


def loopback_port_free(port: int) -> bool:
    """Whether a TCP socket can bind this loopback port right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return False
        return True


def free_loopback_port(
    offsets: tuple[int, ...] = (0,),
    *,
    attempts: int = 200,
    choose=random.Random().choice,
    is_free=loopback_port_free,
) -> int:
    """A --port whose own and every derived port (port + each offset, see
    pcgkit.sglang.facts.derived_port_offsets) is valid and free right now (a race is possible but rare)."""
    window = port_window(offsets)
    if not window:
        raise NoFreePortError(f"no --port leaves room for offsets up to {max(offsets)} below {PORT_CEILING}")
    for _ in range(attempts):
        port = choose(window)
        if all(is_free(port + offset) for offset in offsets):
            return port
    raise NoFreePortError(f"no free loopback port with free derived ports (offsets {offsets}) in {attempts} tries")


def http_ok(url: str, timeout_s: float = 2.0) -> bool:
    """True when GET url answers 200; any connection error or other status is 'not yet'."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return False


def wait_until_ready(
    server: proc.Spawned,
    url: str,
    timeout_s: float,
    *,
    poll_s: float = 1.0,
    probe: Callable[[str], bool] = http_ok,
) -> tuple[Readiness, float]:
    """Poll url until it answers, the server dies, or timeout_s passes."""
    start = time.monotonic()
    while True:
        if server.poll() is not None:
            return Readiness.DIED, time.monotonic() - start
        if probe(url):
            return Readiness.READY, time.monotonic() - start
        if time.monotonic() - start >= timeout_s:
            return Readiness.TIMED_OUT, time.monotonic() - start
        time.sleep(poll_s)


def generate_once(url: str, prompt: str, max_new_tokens: int, timeout_s: float) -> Generation:
    """POST one greedy /generate request; ok only when the answer is JSON with a string 'text'."""
    body = json.dumps(
        {"text": prompt, "sampling_params": {"max_new_tokens": max_new_tokens, "temperature": 0.0}}
    ).encode()
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
    start = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            payload = response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return Generation(False, f"HTTP {exc.code}: {exc.read()[:300]!r}", time.monotonic() - start)
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as exc:
        return Generation(False, f"{type(exc).__name__}: {exc}", time.monotonic() - start)
    duration = time.monotonic() - start
    try:
        answer = json.loads(payload)
    except json.JSONDecodeError:
        return Generation(False, f"answer is not JSON: {payload[:300]!r}", duration)
    text = answer.get("text") if isinstance(answer, dict) else None
    if not isinstance(text, str):
        return Generation(False, f"answer has no string 'text': {payload[:300]!r}", duration)
    return Generation(True, text, duration)


def group_members(leader_pid: int, proc_root: Path = Path("/proc")) -> tuple[str, ...]:
    """Live processes whose process group or session is the leader's ("pid:name:state"), from /proc.

    The server starts in its own session (pcgkit.util.proc.spawn), so every process it forks (SGLang's
    scheduler, detokenizer, compile workers) carries the leader's pid as session id even after the
    leader died and they were re-parented; one that called setsid itself would escape this check.
    Zombies (state Z) are dead already and only wait to be reaped by their parent: not counted."""
    found = []
    for entry in proc_root.iterdir() if proc_root.is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone in between
            continue
        # "pid (comm) state ppid pgrp session ..." -- comm may hold spaces and parentheses
        name = stat[stat.find("(") + 1 : stat.rfind(")")]
        fields = stat[stat.rfind(")") + 2 :].split()
        state, pgrp, session = fields[0], int(fields[2]), int(fields[3])
        if state != "Z" and leader_pid in (pgrp, session):
            found.append(f"{entry.name}:{name}:{state}")
    return tuple(sorted(found, key=lambda s: int(s.split(":")[0])))


def wait_group_gone(leader_pid: int, timeout_s: float = 10.0, poll_s: float = 0.2) -> tuple[str, ...]:
    """group_members until none is left or timeout_s passes (SIGKILL is delivered asynchronously)."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = group_members(leader_pid)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(poll_s)


@dataclasses.dataclass
class LiveServer:
    """A started server while `running_server` holds it: where it answers and how it came up."""

    url: str
    readiness: Readiness
    waited_s: float
    spawned: proc.Spawned


@contextlib.contextmanager
def running_server(
    argv: Sequence[str],
    *,
    port: int,
    log_path: Path,
    env: Mapping[str, str] | None = None,
    ready_timeout_s: float = 900.0,
    poll_s: float = 1.0,
) -> Iterator[LiveServer]:
    """Start the server and wait for it; the block uses it; the whole process group is always stopped
    at the end (the stop status and what was left are set on the yielded value's `spawned`)."""
    url = f"http://{LOOPBACK}:{port}"
    with proc.spawn(argv, log_path=log_path, env=env) as server:
        readiness, waited = wait_until_ready(server, url + HEALTH_PATH, ready_timeout_s, poll_s=poll_s)
        yield LiveServer(url, readiness, waited, server)


def serve_once(argv: Sequence[str], *, log_path: Path, generate_timeout_s: float = 120.0,
               prompt: str = "The quick brown fox", max_new_tokens: int = 8, **launch: Any) -> ServerRun:
    """Start the server (`launch`: running_server's port, env, ready_timeout_s, poll_s), wait, generate once when
    ready, and always stop the whole process group."""
    with running_server(argv, log_path=log_path, **launch) as live:
        generation = None
        if live.readiness is Readiness.READY:
            generation = generate_once(live.url + GENERATE_PATH, prompt, max_new_tokens, generate_timeout_s)
        exit_status = live.spawned.stop()
    group_left = wait_group_gone(live.spawned.pid) if os.path.isdir("/proc") else None
    return ServerRun(
        argv=tuple(str(a) for a in argv),
        log_path=log_path,
        readiness=live.readiness,
        waited_s=round(live.waited_s, 3),
        exit_status=exit_status if live.readiness is Readiness.DIED else None,
        generation=generation,
        group_left=group_left,
    )
