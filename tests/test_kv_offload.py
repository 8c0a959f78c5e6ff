"""The host-memory KV tier (prefillKvOffloadGiB, decodeKvOffloadGiB): what reaches each engine, what Ray makes of it
(read in Ray 2.58's installed package; vLLM 0.26.0's files are read in lab/tests/test_kv_offload_source.py), what the
preview states and refuses (infra/settings/kv_offload.py)."""

from __future__ import annotations

import inspect

import pytest
from ray.llm._internal.serve.core.configs.llm_config import LLMConfig
from ray.llm._internal.serve.engines.vllm.kv_transfer import multi_connector as ray_multi_connector
from ray.llm._internal.serve.engines.vllm.kv_transfer.base import DefaultConnectorBackend
from ray.llm._internal.serve.engines.vllm.kv_transfer.factory import KVConnectorBackendFactory
from ray.serve.schema import ServeDeploySchema

from infra.settings.kv_offload import (
    GIB,
    MULTI_CONNECTOR,
    OFFLOADING_CONNECTOR,
    RAY_OBJECT_STORE_SHARE,
    largest_tier_gib,
)
from infra.settings.topology import ray_worker_memory_gib
from tests.conftest import rejection
from tests.rayservice_parts import pd_args, serve_config
from tools.instance_type_facts import INSTANCE_TYPES
from tools.offline import StackRun, run_stack

TIER_GIB = 32
# A dense model the offline Hub answers for (tools/offline_models.py): the tier is refused for the hybrid default.
DENSE_MODEL = "Qwen/Qwen3-8B"
TIERED = {"modelSource": DENSE_MODEL, "prefixCaching": "on", "prefillKvOffloadGiB": TIER_GIB}
L4_NODE = "g6.8xlarge"


@pytest.fixture(scope="module")
def tiered() -> StackRun:
    return run_stack(TIERED)


def transfer(run: StackRun, side: str) -> dict:
    return pd_args(run)[f"{side}_config"]["engine_kwargs"]["kv_transfer_config"]


def node_shape(instance_type: str):
    from infra.settings.instance_types import InstanceShape

    facts = INSTANCE_TYPES[instance_type]
    return InstanceShape(
        instance_type,
        facts.gpus,
        facts.gpu_name,
        facts.gpu_memory_mib,
        True,
        1,
        facts.vcpus,
        facts.memory_mib,
        1,
        (facts.architecture,),
    )


# --- what reaches the engines ---


def test_a_tiered_side_runs_nixl_first_and_the_tier_beside_it(tiered):
    kv = transfer(tiered, "prefill")
    nixl, tier = kv["kv_connector_extra_config"]["connectors"]
    assert kv["kv_connector"] == MULTI_CONNECTOR and kv["kv_role"] == nixl["kv_role"] == "kv_producer"
    assert nixl["kv_connector"] == "NixlConnector"
    assert nixl["kv_connector_extra_config"] == {"backends": ["LIBFABRIC"]}
    assert tier == {
        "kv_connector": OFFLOADING_CONNECTOR,
        "kv_role": "kv_both",
        "kv_connector_extra_config": {"cpu_bytes_to_use": TIER_GIB * GIB},
    }


def test_a_side_without_a_tier_keeps_nixl_alone(tiered):
    assert transfer(tiered, "decode")["kv_connector"] == "NixlConnector"
    assert transfer(tiered, "decode")["engine_id"] == "decode"


def test_the_tiered_side_sets_no_engine_id_so_each_engine_gets_vllms_uuid(tiered):
    """Ray's NIXL backend suffixes the engine id per replica on a deep copy under MultiConnector (its setup writes
    `self.kv_transfer_config`, the sub-config's); vLLM's KVTransferConfig gives an unset id a uuid4, and
    MultiConnector's children inherit the parent's."""
    kv = transfer(tiered, "prefill")
    assert "engine_id" not in kv and "engine_id" not in kv["kv_connector_extra_config"]["connectors"][0]
    ray_setup = inspect.getsource(ray_multi_connector.MultiConnectorBackend.setup)
    assert "sub_llm_config = copy.deepcopy(self.llm_config)" in ray_setup


def test_ray_hands_the_pd_protocol_to_nixl_and_a_no_op_backend_to_the_tier():
    """Ray Serve LLM 2.58's MultiConnectorBackend delegates the PD protocol to its first child, and its factory
    gives a connector it has no backend for (OffloadingConnector) the default one, whose setup does nothing."""
    assert "return self._connector_backends[0]" in inspect.getsource(ray_multi_connector.MultiConnectorBackend)
    assert KVConnectorBackendFactory.get_backend_class(OFFLOADING_CONNECTOR) is DefaultConnectorBackend
    assert KVConnectorBackendFactory.get_backend_class(MULTI_CONNECTOR) is ray_multi_connector.MultiConnectorBackend


@pytest.mark.parametrize("side", ["prefill", "decode"])
def test_ray_serve_llm_takes_the_tiered_engine_config(tiered, side):
    LLMConfig.model_validate(pd_args(tiered)[f"{side}_config"])


def test_the_tiered_serve_config_validates_with_rays_serve_schema(tiered):
    ServeDeploySchema.model_validate(serve_config(tiered))


# --- what the preview states and refuses ---


def test_a_tier_where_the_side_keeps_no_prefix_cache_is_refused_naming_the_key():
    """The tier finds blocks by their prefix-cache hashes (kv_connector/v1/offloading/config.py)."""
    off = {"modelSource": DENSE_MODEL, "prefixCaching": "off", "prefillKvOffloadGiB": 8}
    (problem,) = [p for p in rejection(off).problems if "KvOffloadGiB" in p]
    assert problem.startswith("prefillKvOffloadGiB=8 is invalid with prefix caching off on the prefill side")


@pytest.mark.parametrize("key", ["prefillKvOffloadGiB", "decodeKvOffloadGiB"])
def test_a_tier_for_the_hybrid_default_is_refused_as_the_gpu_runs_crashed(key):
    """vLLM 0.26's offloading scheduler asserted and the engine died under 16 concurrent chats on the default model,
    in both GPU runs (lab/records/2026-12-07-kv-offload/README.md)."""
    (problem,) = [p for p in rejection({"prefixCaching": "on", key: 8}).problems if "KvOffloadGiB" in p]
    assert problem.startswith(f"{key}=8 is invalid with a hybrid model")
    assert "update_state_after_alloc" in problem


def test_the_largest_tier_the_l4_node_holds_is_accepted_and_one_more_refused():
    """g6.8xlarge (128 GiB): the worker pod's Ray container's memory (the pod's less the edge's) less Ray's object
    store share and the engine's own."""
    node = node_shape(L4_NODE)
    ray_container = ray_worker_memory_gib(node)
    largest = largest_tier_gib(node, 1)
    assert largest == int(ray_container - ray_container * RAY_OBJECT_STORE_SHARE - 12) == 63
    run_stack({**TIERED, "prefillKvOffloadGiB": largest})
    (problem,) = [p for p in rejection({**TIERED, "prefillKvOffloadGiB": largest + 1}).problems if "KvOff" in p]
    assert problem.startswith(f"prefillKvOffloadGiB={largest + 1} is invalid on gpuNodeType='{L4_NODE}'")
    assert f"allowed is at most {largest} per engine" in problem


def test_rays_object_store_share_is_rays_default():
    from ray._private import ray_constants

    assert ray_constants.DEFAULT_OBJECT_STORE_MEMORY_PROPORTION == RAY_OBJECT_STORE_SHARE
