"""The rollout's GET through a port-forward (infra/serving/dashboard_forward.py), over a real socket to a real HTTP
server standing in for the dashboard: the forwarded port is a connected socket (kubernetes-client/python
kubernetes/stream/ws_client.py PortForward.socket), here one connected to the server instead of the API's websocket."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from infra.serving.dashboard_forward import forwarded_get
from tests.openai_server import send_json

SEEN: list[dict[str, str]] = []


class Dashboard(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        SEEN.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
        send_json(self, {"applications": {}})

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def dashboard() -> Iterator[tuple[str, int]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Dashboard)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[:2]
    server.shutdown()


class Tunnel:
    """What kubernetes.stream.portforward returns, its one port connected to `address`."""

    def __init__(self, address: tuple[str, int], port: int) -> None:
        self.port, self.sock, self.closed = port, socket.create_connection(address), False

    def socket(self, port: int) -> socket.socket:
        assert port == self.port
        return self.sock

    def close(self) -> None:
        self.sock.close()
        self.closed = True


def test_a_get_reaches_the_pods_port_with_its_headers_and_closes_the_tunnel(dashboard):
    tunnels: list[Tunnel] = []
    calls: list[tuple] = []

    def forward(connect, pod, namespace, ports):
        calls.append((connect, pod, namespace, ports))
        tunnels.append(Tunnel(dashboard, int(ports)))
        return tunnels[-1]

    status, body = forwarded_get(
        forward, "connect", "inference", "llm-head-x", 8265, "/api/serve/applications/", {"x-h": "v"}, 5.0
    )
    assert (status, json.loads(body)) == (200, {"applications": {}})
    assert calls == [("connect", "llm-head-x", "inference", "8265")]
    assert SEEN[-1]["path"] == "/api/serve/applications/" and SEEN[-1]["x-h"] == "v"
    assert tunnels[0].closed
