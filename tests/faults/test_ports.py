"""Launch ports: a --port is only chosen when every port SGLang derives from it (port + 10000 for gRPC,
+1 for the sidecar, +233.. with DP attention; read from each release's server_args.py) is a valid port and
free. The kernel's ephemeral range (32768-60999 on the H200) killed about one launch in five before."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from pcgkit.e2e.server import PORT_CEILING, NoFreePortError, free_loopback_port, port_window
from pcgkit.sglang.facts import KNOWN_DERIVED_PORT_OFFSETS, derived_port_offsets_from_source

SGLANG_SOURCE = Path(__file__).resolve().parent.parent / "data" / "sglang_source"


def test_every_port_of_the_window_leaves_room_for_the_largest_offset():
    """No --port in the window derives a port above 65535 (the gRPC port is port + 10000)."""
    window = port_window(KNOWN_DERIVED_PORT_OFFSETS)
    assert window.stop - 1 + 10000 == PORT_CEILING and window.start >= 1024


def test_a_picker_fed_the_ephemeral_range_never_returns_a_port_sglang_refuses():
    """Even when the random choice would lean high, every returned port + 10000 is <= 65535."""
    chosen = []

    def leaning_high(window):
        chosen.append(window[-1])
        return window[-1]

    port = free_loopback_port(KNOWN_DERIVED_PORT_OFFSETS, choose=leaning_high, is_free=lambda p: True)
    assert port + 10000 <= PORT_CEILING and chosen == [port]


def test_a_busy_derived_port_rejects_the_candidate():
    """A candidate whose gRPC port is taken right now is skipped; the next one with all ports free is used."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    busy = listener.getsockname()[1]
    listener.listen()
    try:
        candidates = iter([busy - 10000, 30001])
        port = free_loopback_port((0, 10000), choose=lambda window: next(candidates))
        assert port == 30001
    finally:
        listener.close()


def test_no_free_port_is_a_clear_error_not_a_hang():
    """When nothing in the window is free, the picker gives up after its attempts with a one-line reason."""
    with pytest.raises(NoFreePortError, match="no free loopback port"):
        free_loopback_port((0, 10000), attempts=5, is_free=lambda p: False)
    with pytest.raises(NoFreePortError, match="no --port leaves room"):
        free_loopback_port((0, 70000))


def test_offsets_are_read_from_the_release_source():
    """SGLang's server_args text: `self.port + 10000`, '--port + 1', ZMQ_TCP_PORT_DELTA = 233 and port_base + k."""
    text = ('        self.grpc_port = (grpc_port_env if grpc_port_env is not None else self.port + 10000)\n'
            '            "Defaults to --port + 1. Not used in HTTP mode.",\n'
            "ZMQ_TCP_PORT_DELTA = 233\n"
            "            port_base = dist_init_port + 1\n"
            "            detokenizer_port = port_base + 1\n            scheduler_input_port = port_base + 4\n")
    assert derived_port_offsets_from_source(text) == (0, 1, 233, 234, 235, 238, 10000)
    assert derived_port_offsets_from_source("no ports here") == (0,)


@pytest.mark.parametrize("release", ["0.5.11", "0.5.12"])
def test_the_real_releases_derive_the_known_offsets(release):
    """The lines of 0.5.11's and 0.5.12's own server_args.py give exactly the offsets the kit falls back to."""
    text = (SGLANG_SOURCE / release / "server_args_ports.txt").read_text()
    body = "\n".join(line.split(":", 1)[1] for line in text.splitlines() if line[:1].isdigit())
    assert derived_port_offsets_from_source(body) == KNOWN_DERIVED_PORT_OFFSETS
