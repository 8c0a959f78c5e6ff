"""Prefix-aware routing on the real Ray 2.58, on CPU: the stack's request_router_config (infra/serving/
prefix_routing.py) on a stand-in engine deployment of two replicas (tests/prefix_routing_app.py), its router loaded
from the zip the app's py_modules names, as in the cluster; beside it the same app with Ray Serve LLM's own
PrefixCacheAffinityRouter, which the stack's router fixes (serve_ext/ray_llm_eks_routing/router.py).

Ray runs on 2 CPUs for the module (about 20 s to start and deploy); the livelock check waits LIVELOCK_WAIT_S.
"""

from __future__ import annotations

import random
import shutil
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from infra.serving import prefix_routing
from infra.serving.code_package import ZIP_TOP
from infra.serving.serve_config import deployment_config
from infra.settings.autoscaling import ScalingPace
from infra.settings.stack_config import ServeSide
from tests.conftest import start_local_ray
from tools.project import PROJECT_DIR

STACK_APP, RAY_APP = "stack-router", "ray-router"
RAY_ROUTER = "ray.llm._internal.serve.routing_policies.prefix_aware.prefix_aware_router:PrefixCacheAffinityRouter"
CONVERSATIONS = 8
BURST = 12  # requests at once: more than the two routing tasks per replica Ray runs for two replicas
HOLD_S = 1.0
ANSWER_S = 60.0
LIVELOCK_WAIT_S = 15.0
# One side of two replicas with its prefix cache on and prefixAwareRouting: what the stack emits for it.
ROUTED_SIDE = ServeSide(
    replicas=2, max_num_seqs=None, max_num_batched_tokens=None, prefix_caching=True, prefix_routing=True
)


@dataclass(frozen=True)
class Apps:
    stack: Any  # the app's handle, with the stack's router
    ray: Any  # with Ray Serve LLM's own
    gcs_address: str
    code: Path  # where the router's zip is


def application(name: str, code_dir: Path, router_class: str | None = None) -> dict[str, Any]:
    engine_options = deployment_config(ROUTED_SIDE, ScalingPace(30, 600, "p99"), "prefill")
    if router_class:
        engine_options["request_router_config"]["request_router_class"] = router_class
    return {
        "name": name,
        "import_path": "tests.prefix_routing_app:build_app",
        "route_prefix": f"/{name}",
        "runtime_env": {"py_modules": [prefix_routing.CODE.uri(str(code_dir))]},
        "args": {"deployment_config": engine_options},
    }


@pytest.fixture(scope="module")
def apps() -> Iterator[Apps]:
    ray = pytest.importorskip("ray", reason="requirements-test.txt installs ray[serve]")
    from ray import serve
    from ray.serve._private.api import serve_start
    from ray.serve.schema import ServeDeploySchema

    workdir = Path(tempfile.mkdtemp(prefix="rayroute", dir="/tmp"))
    code = workdir / "code"
    code.mkdir()
    (code / prefix_routing.CODE.zip_name()).write_bytes(prefix_routing.CODE.zip())
    config = {"applications": [application(STACK_APP, code), application(RAY_APP, code, RAY_ROUTER)]}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", str(PROJECT_DIR))  # the stand-in's module; the router comes from the zip
        start_local_ray(workdir / "ray")
    # serve.status() below rebuilds each deployment's RequestRouterConfig, which imports the router (see
    # test_serve_status_imports_the_router): from inside the zip, as an operator would.
    sys.path.insert(0, str(router_path(code)))
    try:
        client = serve_start(http_options={"host": "127.0.0.1", "port": 0})
        client.deploy_apps(ServeDeploySchema.model_validate(config))
        deadline = time.monotonic() + 120
        for name in (STACK_APP, RAY_APP):
            while (status := serve.status().applications.get(name)) is None or status.status != "RUNNING":
                assert status is None or status.status not in ("DEPLOY_FAILED", "UNHEALTHY"), status.message
                assert time.monotonic() < deadline, f"{name} not RUNNING after 120 s: {status}"
                time.sleep(0.5)
        yield Apps(
            serve.get_app_handle(STACK_APP),
            serve.get_app_handle(RAY_APP),
            ray.get_runtime_context().gcs_address,
            code,
        )
    finally:
        sys.path.remove(str(router_path(code)))
        serve.shutdown()
        ray.shutdown()
        shutil.rmtree(workdir, ignore_errors=True)


def router_path(code: Path) -> Path:
    """The package's directory inside its zip, which Python imports from (zipimport takes an archive's subdirectory)."""
    return code / prefix_routing.CODE.zip_name() / ZIP_TOP


def texts(seed: int, count: int, length: int) -> list[str]:
    """Random letters: two of them share a prefix of a character or two at most, far under the router's 10 %."""
    generator = random.Random(seed)
    return ["".join(generator.choice(string.ascii_letters) for _ in range(length)) for _ in range(count)]


@pytest.fixture(scope="module")
def first_turns(apps) -> dict[str, str]:
    """Each conversation's first turn, one after the other: conversation -> the replica that served it."""
    return {turn: apps.stack.remote([turn]).result(timeout_s=ANSWER_S) for turn in texts(1, CONVERSATIONS, 400)}


def test_unrelated_conversations_spread_over_both_replicas(first_turns):
    """A prompt that matches under 10 % of any routed one goes to the replica holding the least text
    (prefix_aware_router.py `_prefix_match_best_replicas`, the prefix tree's `get_smallest_tenants`)."""
    assert len(set(first_turns.values())) == 2


def test_each_conversations_next_turn_goes_to_the_replica_that_served_it(apps, first_turns):
    """The next turn resends the history (OpenAI chat), so it starts with the prompt the router recorded for that
    replica (`on_request_routed` inserts it) and matches it whole."""
    replies = texts(2, CONVERSATIONS, 40)
    second = {
        turn: apps.stack.remote([turn, reply]).result(timeout_s=ANSWER_S)
        for turn, reply in zip(first_turns, replies, strict=True)
    }
    assert second == first_turns


def test_a_burst_sharing_one_prefix_is_answered_whole(apps):
    """BURST requests at once behind one system prompt, each held HOLD_S by its replica: every one is answered."""
    system = texts(3, 1, 2000)[0]
    burst = [apps.stack.remote([system, question], HOLD_S) for question in texts(4, BURST, 30)]
    assert len([response.result(timeout_s=ANSWER_S) for response in burst]) == BURST


# What `serve status` (Ray's CLI) does: read the instance's details, then build them into Ray's schema.
SERVE_STATUS = """
import sys
import ray
from ray import serve
ray.init(address=sys.argv[1], logging_level="ERROR")
try:
    serve.status()
    print("read without the package")
except ModuleNotFoundError as error:
    print(f"refused: {error}")
sys.path.insert(0, sys.argv[2])
print(serve.status().applications["stack-router"].status.value)
"""


def test_serve_status_imports_the_router(apps):
    """Ray 2.58's `serve.status()` (and the `serve status` CLI) rebuilds each deployment's config into
    `ServeInstanceDetails`, whose RequestRouterConfig imports the router by its path (ray/serve/config.py
    `_serialize_request_router_cls`): in a process without the stack's package it fails, with the zip's directory on
    its path it reads. The dashboard's JSON (what KubeRay and the stack's own checks read) passes the controller's
    dict through as it is (ray/dashboard/modules/serve/serve_head.py)."""
    answer = subprocess.run(
        [sys.executable, "-c", SERVE_STATUS, apps.gcs_address, str(router_path(apps.code))],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd="/",
    ).stdout.splitlines()
    assert answer == ["refused: No module named 'ray_llm_eks_routing'", "RUNNING"]


def test_rays_own_router_hangs_on_the_same_burst(apps):
    """Ray Serve LLM 2.58's PrefixCacheAffinityRouter lacks the FIFOMixin Serve's default router has: a routing
    task left without a request fulfils nothing and loops without suspending, so its caller's router never runs the
    others (serve_ext/ray_llm_eks_routing/router.py has the reading). Its caller answers none of the burst."""
    system = texts(5, 1, 2000)[0]
    burst = [apps.ray.remote([system, question], HOLD_S) for question in texts(6, BURST, 30)]
    with pytest.raises((TimeoutError, FutureTimeout)):
        burst[-1].result(timeout_s=LIVELOCK_WAIT_S)
