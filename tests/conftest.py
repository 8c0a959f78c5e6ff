"""Shared fixtures: each shipped stack evaluated once per session under Pulumi's mocks, and a local OpenAI API."""

from __future__ import annotations

import functools
import itertools
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from infra.settings.kinds import DEFAULT_KUBERAY_VERSION, VALIDATED_KUBERAY_VERSIONS
from infra.settings.stack_config import ConfigError
from tests.openai_server import OpenAIServer
from tools import offline
from tools.offline import StackRun, run_stack
from tools.project import PROJECT, SHIPPED_STACKS

# Ray's validation classes must never reach for a cluster in tests.
os.environ.setdefault("RAY_ENABLE_AUTO_CONNECT", "0")

# The public range a test operator deploys from (global unicast, not an RFC 5737 documentation range).
OPERATOR_CIDRS = ["100.24.10.0/24"]
# Serve autoscaling on, each side between one and two replicas, scaling at four ongoing requests a replica.
SERVE_AUTOSCALING = {
    "serveAutoscaling": True,
    "prefillMaxReplicas": 2,
    "decodeMaxReplicas": 2,
    "prefillTargetOngoingRequests": 4,
    "decodeTargetOngoingRequests": 4,
}
# KubeRay's NewCluster upgrade for cluster-spec changes, with the second system node it needs for a second Ray head
# beside the first during an upgrade (m7i.xlarge holds one head and the system pods: infra/settings/footprint.py).
NEW_CLUSTER = {"clusterUpgradeStrategy": "newCluster", "systemNodeCount": 2}
API_ALLOW_LIST_KEY = f"{PROJECT}:apiPublicAccessCidrs"
# What the first deploy's steps (docs/getting-started.md) add to a stack whose endpoint leaves the cluster: the ACM
# certificate of its DNS name, and the API keys as one secret (the stack file holds it encrypted; offline reads a
# stand-in key).
CERTIFICATE_KEY = f"{PROJECT}:serveCertificateArn"
API_KEYS_KEY = f"{PROJECT}:serveApiKeys"
OPERATOR_CERTIFICATE = "arn:aws:acm:{region}:123456789012:certificate/0f6e5d4c-3b2a-4190-8877-665544332211"
# Two API keys as `openssl rand -hex 32` makes them, and the settings that expose dev's endpoint with them.
API_KEYS = ["3f1c" * 16, "9a7e" * 16]
EXPOSED_SECRET_KEYS = ("serveApiKeys",)


def exposed(exposure: str = "internal", **settings: Any) -> dict[str, Any]:
    """Overrides that expose dev's endpoint as a user would (certificate of dev's region, the keys as a secret);
    pass EXPOSED_SECRET_KEYS as the run's secret_keys."""
    return {
        "serveExposure": exposure,
        "serveCertificateArn": OPERATOR_CERTIFICATE.format(region="sa-east-1"),
        "serveApiKeys": API_KEYS,
        "serveSourceCidrs": ["10.0.0.0/8"] if exposure == "internal" else OPERATOR_CIDRS,
        **settings,
    }


# The stack files' values as shipped, for the tests of what a fresh clone does before its user adds an address.
SHIPPED_STACK_FILE_VALUES = offline._stack_file_values


@pytest.fixture(scope="session", autouse=True)
def operator_allow_list() -> Iterator[None]:
    """Every stack file as a new user has it after the first deploy's steps (docs/getting-started.md), which add their
    address and, for a stack whose endpoint leaves the cluster, its certificate and API keys.

    No shipped stack carries an API allow-list (a real one is the user's own address); the step
    `pulumi config set --path 'apiPublicAccessCidrs[0]' <ip>/32` writes it into Pulumi.<stack>.yaml, and
    `pulumi config set --secret serveApiKeys ...` writes the keys there encrypted.
    """
    stack_file_values = offline._stack_file_values

    def with_allow_list(stack: str) -> dict[str, Any]:
        values = stack_file_values(stack)
        exposed = {}
        if values.get(f"{PROJECT}:serveExposure", "none") != "none":
            region = values.get("aws:region", offline.project_config()["aws:region"])
            exposed = {
                CERTIFICATE_KEY: OPERATOR_CERTIFICATE.format(region=region),
                API_KEYS_KEY: {"secure": "v1:AAAAencryptedkeysAAAA"},
            }
        return {API_ALLOW_LIST_KEY: OPERATOR_CIDRS, **exposed, **values}

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(offline, "_stack_file_values", with_allow_list)
        yield


# Ray 2.58 waits a fixed 30 s for a new node's raylet to register with its GCS (ray/_private/node.py,
# `raylet_start_wait_time_s`), then raises this. On the 2-core CI machine one start in a clean-clone run timed out so
# (GCS "Deadline Exceeded", 2026-12-07) while the same test passed alone and in the run before: a start that times
# out is retried once, from scratch. What the tests assert is never retried.
RAY_START_TIMED_OUT = "The current node timed out during startup"


def start_local_ray(temp_dir: Path, num_cpus: int = 2) -> None:
    """A local Ray without the dashboard, its session under `temp_dir`: started again once if its start timed out."""
    import ray

    for attempt in (1, 2):
        try:
            ray.init(num_cpus=num_cpus, include_dashboard=False, _temp_dir=str(temp_dir))
            return
        except Exception as error:
            if RAY_START_TIMED_OUT not in str(error) or attempt == 2:
                raise
            ray.shutdown()


def rejection(overrides: dict[str, Any], **run_options: Any) -> ConfigError:
    """The ConfigError the program raises for these overrides, after checking it declared no resource first."""
    with pytest.raises(ConfigError) as caught:
        run_stack(overrides, **run_options)
    assert caught.value.declared_resources == []
    return caught.value


def info_notes(run: StackRun) -> list[str]:
    """The INFO messages: what the preview says about the plan (alerts, Ray's token, a change's cost, the capacity
    estimate)."""
    return [message.text for message in run.messages if message.severity == "info"]


@functools.cache
def shipped_run(stack: str) -> StackRun:
    """A shipped stack evaluated once per session, whichever fixture or test asks for it first."""
    return run_stack(stack=stack)


@pytest.fixture(scope="session")
def dev() -> StackRun:
    return shipped_run("dev")


@pytest.fixture(scope="session")
def prod() -> StackRun:
    return shipped_run("prod")


@pytest.fixture(scope="session", params=SHIPPED_STACKS)
def shipped(request: pytest.FixtureRequest) -> StackRun:
    return shipped_run(request.param)


class KubeRayStack(NamedTuple):
    """A shipped stack run with one validated KubeRay release as its `kuberayVersion`."""

    stack: str
    version: str
    run: StackRun


@functools.cache
def kuberay_run(stack: str, version: str) -> StackRun:
    """A shipped stack evaluated once per session at one KubeRay release (the default one is the shipped run)."""
    return (
        shipped_run(stack)
        if version == DEFAULT_KUBERAY_VERSION
        else run_stack({"kuberayVersion": version}, stack=stack)
    )


@pytest.fixture(
    scope="session",
    params=list(itertools.product(SHIPPED_STACKS, VALIDATED_KUBERAY_VERSIONS)),
    ids=lambda param: f"{param[0]}-kuberay-{param[1]}",
)
def kuberay_stack(request: pytest.FixtureRequest) -> KubeRayStack:
    """Each shipped stack at each KubeRay release the stack is validated against (1.7.0 is the default)."""
    stack, version = request.param
    return KubeRayStack(stack, version, kuberay_run(stack, version))


@pytest.fixture(scope="session")
def openai_server() -> Iterator[OpenAIServer]:
    server = OpenAIServer()
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def api(openai_server: OpenAIServer) -> OpenAIServer:
    """The server with its default model and reply; a test may change them for itself."""
    openai_server.reset()
    return openai_server
