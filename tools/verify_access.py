"""How `tools.verify` reaches a deployed stack: its outputs, its Kubernetes API (the `Cluster` interface, which the
tests answer from recorded API objects) and port-forwards to its in-cluster services.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO
from urllib.parse import urlparse

from kubernetes import client as kubernetes_client
from kubernetes import config as kubernetes_config
from kubernetes.client.exceptions import ApiException
from kubernetes.stream import stream

from tools.project import PROJECT_DIR

PORT_FORWARD_READY = re.compile(r"Forwarding from 127\.0\.0\.1:(\d+)")
PORT_FORWARD_TIMEOUT_S = 30


class VerifyError(Exception):
    """Verification cannot start: the outputs are missing or unreadable."""


# --- what the stack says ---


@dataclass(frozen=True)
class StackOutputs:
    namespace: str
    ray_service_name: str
    model_id: str
    gpu_node_group_name: str
    serve_endpoint: str
    kubeconfig: str | None = None
    prometheus_endpoint: str | None = None  # with observability
    api_key: str | None = field(default=None, repr=False)  # serveApiKey, when the endpoint asks for keys

    REQUIRED = ("namespace", "rayServiceName", "modelId", "gpuNodeGroupName", "serveEndpoint")

    @classmethod
    def from_json(cls, outputs: Mapping[str, Any]) -> StackOutputs:
        missing = [key for key in cls.REQUIRED if not outputs.get(key)]
        if missing:
            raise VerifyError(f"stack outputs lack {', '.join(missing)}: was `pulumi up` run on this stack?")
        kubeconfig = outputs.get("kubeconfig")
        if kubeconfig is not None and not isinstance(kubeconfig, str):
            kubeconfig = json.dumps(kubeconfig)  # an object output rather than JSON text
        return cls(
            namespace=outputs["namespace"],
            ray_service_name=outputs["rayServiceName"],
            model_id=outputs["modelId"],
            gpu_node_group_name=outputs["gpuNodeGroupName"],
            serve_endpoint=outputs["serveEndpoint"],
            kubeconfig=kubeconfig or None,
            prometheus_endpoint=outputs.get("prometheusEndpoint") or None,
            api_key=outputs.get("serveApiKey") or None,
        )

    @property
    def serve_service(self) -> str:
        """KubeRay's serve Service, as the stack's in-cluster endpoint names it."""
        return (urlparse(self.serve_endpoint).hostname or "").split(".")[0]

    @property
    def serve_port(self) -> int:
        return urlparse(self.serve_endpoint).port or 80

    @property
    def prometheus_service(self) -> tuple[str, str, int]:
        """Namespace, Service and port of the stack's Prometheus, from its in-cluster endpoint."""
        endpoint = urlparse(self.prometheus_endpoint or "")
        service, namespace = (endpoint.hostname or "").split(".")[:2]
        return namespace, service, endpoint.port or 80


def read_outputs(stack: str, outputs_file: Path | None) -> StackOutputs:
    if outputs_file is not None:
        try:
            text = outputs_file.read_text()
        except OSError as error:
            raise VerifyError(f"cannot read {outputs_file}: {error.strerror}") from error
        source = str(outputs_file)
    else:
        command = ["pulumi", "stack", "output", "--json", "--show-secrets", "--stack", stack]
        try:
            done = subprocess.run(command, cwd=PROJECT_DIR, capture_output=True, text=True, check=False)
        except FileNotFoundError as error:
            raise VerifyError("the pulumi CLI is not installed: install it, or pass --outputs-file") from error
        if done.returncode != 0:
            raise VerifyError(f"`{' '.join(command)}` failed: {done.stderr.strip()}")
        text, source = done.stdout, "pulumi stack output"
    try:
        outputs = json.loads(text)
    except json.JSONDecodeError as error:
        raise VerifyError(f"{source} is not JSON: {error}") from error
    return StackOutputs.from_json(outputs)


# --- Kubernetes access ---


class Cluster(Protocol):
    """What verify reads from Kubernetes: API objects as JSON dicts, as `kubectl get -o json` prints them."""

    def list_nodes(self, label_selector: str) -> list[dict[str, Any]]: ...

    def get_rayservice(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def get_service(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def list_pods(self, namespace: str, label_selector: str) -> list[dict[str, Any]]: ...

    def exec_in_pod(self, namespace: str, pod: str, container: str, command: list[str]) -> str:
        """The command's stdout; a non-zero exit (grep finding nothing) is not an error."""
        ...


class KubernetesCluster:
    """The Cluster interface over the official Kubernetes client."""

    def __init__(self, kubeconfig: str | None) -> None:
        self.kubeconfig = kubeconfig
        api = kubernetes_config.new_client_from_config(config_file=kubeconfig)
        self.core = kubernetes_client.CoreV1Api(api)
        self.custom = kubernetes_client.CustomObjectsApi(api)

    @staticmethod
    def _json(call: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any] | None:
        """The raw API response (camelCase, like the fixtures), or None for 404."""
        try:
            document: dict[str, Any] = json.loads(call(*args, _preload_content=False, **kwargs).data)
            return document
        except ApiException as error:
            if error.status == 404:
                return None
            raise

    def list_nodes(self, label_selector: str) -> list[dict[str, Any]]:
        return list((self._json(self.core.list_node, label_selector=label_selector) or {}).get("items", []))

    def get_rayservice(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._json(self.custom.get_namespaced_custom_object, "ray.io", "v1", namespace, "rayservices", name)

    def get_service(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._json(self.core.read_namespaced_service, name, namespace)

    def list_pods(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        found = self._json(self.core.list_namespaced_pod, namespace, label_selector=label_selector)
        return list((found or {}).get("items", []))

    def exec_in_pod(self, namespace: str, pod: str, container: str, command: list[str]) -> str:
        # `stream` swaps the transport of the API client it is given for the call's duration: a client
        # of its own keeps concurrent execs (the NCCL ranks) from swapping each other's.
        own_client = kubernetes_config.new_client_from_config(config_file=self.kubeconfig)
        output: str = stream(
            kubernetes_client.CoreV1Api(own_client).connect_get_namespaced_pod_exec,
            pod,
            namespace,
            container=container,
            command=command,
            stdout=True,
            stderr=False,
            stdin=False,
            tty=False,
        )
        return output


# --- the OpenAI-compatible endpoint ---


def _pass_lines(source: TextIO | None, lines: queue.Queue[str]) -> None:
    for line in source or ():
        lines.put(line)


@contextmanager
def port_forward(
    namespace: str, service: str, port: int, kubeconfig: str | None, kubectl: str = "kubectl", path: str = "/v1"
) -> Iterator[str]:
    """`kubectl port-forward` to the service on a free local port; yields its base URL (the OpenAI API's by default)."""
    command = [kubectl, *(["--kubeconfig", kubeconfig] if kubeconfig else []), "port-forward"]
    command += ["-n", namespace, f"svc/{service}", f":{port}"]
    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except FileNotFoundError as error:
        raise ConnectionError(f"{kubectl} is not installed: install it, or pass --base-url") from error
    lines: queue.Queue[str] = queue.Queue()
    # kubectl prints the local port it picked, then keeps running: read it without blocking the wait.
    threading.Thread(target=_pass_lines, args=(process.stdout, lines), daemon=True).start()
    try:
        deadline = time.monotonic() + PORT_FORWARD_TIMEOUT_S
        while True:
            try:
                ready = PORT_FORWARD_READY.search(lines.get(timeout=0.1))
            except queue.Empty:
                ready = None
            if ready:
                yield f"http://127.0.0.1:{ready.group(1)}{path}"
                return
            if process.poll() is not None or time.monotonic() > deadline:
                problem = (process.stderr.read() if process.poll() is not None and process.stderr else "").strip()
                raise ConnectionError(f"`{' '.join(command)}` did not forward: {problem or 'timed out'}")
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()


@contextmanager
def kubeconfig_file(outputs: StackOutputs, explicit: str | None) -> Iterator[str | None]:
    """The kubeconfig to use: --kubeconfig, else the stack's own (in a private temporary file), else the default."""
    if explicit or not outputs.kubeconfig:
        yield explicit
        return
    descriptor, path = tempfile.mkstemp(prefix="kubeconfig-", suffix=".json")  # readable by its owner only
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write(outputs.kubeconfig)
        yield path
    finally:
        os.unlink(path)
