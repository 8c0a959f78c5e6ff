"""One HTTP GET to a port of a pod, through the Kubernetes API's port-forward.

The rollout reads Ray's dashboard this way, not through the API server's service proxy: a port-forward is connected by
the kubelet inside the pod's own network namespace (the container runtime dials the port on the pod's loopback), so
it needs no NetworkPolicy path to the dashboard, where the service proxy's connection comes from the control plane's
network interfaces in the VPC, addresses a policy cannot tell from the pods' (infra/serving/network_policy.py). It
needs `create` on `pods/portforward`, which the deploying identity has with cluster admin.

kubernetes-client/python `kubernetes/stream/ws_client.py` (`portforward_call`, `PortForward`): each forwarded port is
a socket whose data goes over the API's websocket; `PortForward._Port._Socket` is written to carry
`http.client.HTTPConnection` ("The following socket option is not valid with a socket created from socketpair, and is
set by the http.client.HTTPConnection.connect method").
"""

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
