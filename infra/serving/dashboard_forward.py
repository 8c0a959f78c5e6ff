"""One HTTP GET to a port of a pod, through the Kubernetes API's port-forward.

A port-forward is connected inside the pod's network namespace, so the rollout needs no NetworkPolicy path to the
dashboard, which the API server's service proxy would (docs/security.md#inside-the-cluster, "The rollout")."""

from __future__ import annotations

import http.client
from collections.abc import Callable, Mapping
from typing import Any

# The `portforward` wrapper of kubernetes.stream, passed in so tests can stand a socket in for the API's websocket.
Forwarder = Callable[..., Any]


class _ForwardedConnection(http.client.HTTPConnection):
    """An HTTP/1.1 connection over a socket that is already connected (the forwarded port)."""

    def __init__(self, sock: Any, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._forwarded = sock

    def connect(self) -> None:
        self._forwarded.settimeout(self.timeout)
        self.sock = self._forwarded


def forwarded_get(
    forward: Forwarder,
    connect: Callable[..., Any],
    namespace: str,
    pod: str,
    port: int,
    path: str,
    headers: Mapping[str, str],
    timeout: float,
) -> tuple[int, bytes]:
    """GET `path` on `pod`'s `port`: (status, body). `connect` is CoreV1Api.connect_get_namespaced_pod_portforward,
    `forward` kubernetes.stream.portforward."""
    tunnel = forward(connect, pod, namespace, ports=str(port))
    try:
        connection = _ForwardedConnection(tunnel.socket(port), timeout)
        connection.request("GET", path, headers={"Accept": "application/json", **headers})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        tunnel.close()
