"""How the prefill/decode layout maps onto GPU nodes: pure arithmetic, checked before any resource.

A replica is one vLLM engine of tensor x pipeline parallel GPUs in one STRICT_PACK placement group, a bundle holds a
whole GPU, and every Ray worker pod owns a whole node, so the GPU node count is the nodes the replicas need
(docs/scaling.md#scaling)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from infra.kube.node_allocatable import MAX_PODS_BOUND, allocatable
from infra.settings.instance_types import InstanceShape

# The one NIXL backend Ray 2.58 registers (`NixlConnector`) is vLLM's pull connector. In vLLM 0.26.0
# its decode side raises NotImplementedError for pipeline_parallel_size > 1
# (vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py), and a pull-mode prefill sends no
# pp_size in its kv_transfer_params (nixl/pull_scheduler.py), so decode would read only stage 0.
MAX_PIPELINE_PARALLEL_SIZE = 1

# DaemonSets on every GPU node: aws-node, kube-proxy, the NVIDIA and EFA device plugins.
DAEMONSET_CPU_MILLIS = 1000
DAEMONSET_MEMORY_MIB = 1024


@dataclass(frozen=True)
class Topology:
    prefill_replicas: int
    decode_replicas: int
    tensor_parallel_size: int
    pipeline_parallel_size: int
    node: InstanceShape
    # Prefill plus decode replicas at most, when Ray Serve autoscales (0: the fixed count).
    most_replicas: int = 0
    # GPUs of the aggregated models placed on nodes of their own (infra/settings/models.py OWN_NODES). The node
    # types' GPU counts (1, 4, 8) and the divisors a replica may take are powers of two, so whole replicas fill
    # the nodes and the GPUs divided by a node's are the nodes they need.
    model_gpus: int = 0

    @property
    def gpus_per_replica(self) -> int:
        return self.tensor_parallel_size * self.pipeline_parallel_size

    @property
    def replicas_per_node(self) -> int:
        return self.node.gpus // self.gpus_per_replica

    @property
    def replicas(self) -> int:
        return self.prefill_replicas + self.decode_replicas

    @property
    def pd_nodes(self) -> int:
        """Nodes of the prefill/decode replicas Ray Serve starts with."""
        return math.ceil(self.replicas / self.replicas_per_node)

    @property
    def model_nodes(self) -> int:
        """Nodes of the aggregated models placed on their own."""
        return math.ceil(self.model_gpus / self.node.gpus)

    @property
    def spare_gpus(self) -> int:
        """GPUs the PD replicas leave idle on their nodes even at their most (what a model on spare GPUs may take);
        none where Ray Serve may scale the pair past them."""
        return max(0, self.pd_nodes * self.node.gpus - self.peak_replicas * self.gpus_per_replica)

    @property
    def gpu_nodes(self) -> int:
        """Nodes for the replicas Ray Serve starts with (and keeps, when it autoscales)."""
        return self.pd_nodes + self.model_nodes

    @property
    def peak_replicas(self) -> int:
        """The most replicas Ray Serve may run: the fixed count, or the autoscaling ceiling above it."""
        return max(self.replicas, self.most_replicas)

    @property
    def most_gpu_nodes(self) -> int:
        """Nodes for the most replicas Ray Serve may scale to."""
        return math.ceil(self.peak_replicas / self.replicas_per_node) + self.model_nodes

    @property
    def arithmetic(self) -> str:
        """The derivation of the node count, in words a config error can quote."""
        return (
            f"({self.prefill_replicas} prefill + {self.decode_replicas} decode replicas) x "
            f"{self.gpus_per_replica} GPU(s) each (tensorParallelSize={self.tensor_parallel_size} x "
            f"pipelineParallelSize={self.pipeline_parallel_size}), {self.replicas_per_node} replica(s) per "
            f"{self.node.instance_type} of {self.node.gpus} GPU(s)"
            + (f" + {self.model_gpus} GPU(s) of models on their own nodes" if self.model_gpus else "")
            + f" -> {self.gpu_nodes} GPU node(s)"
        )


def topology_problems(topology: Topology) -> list[str]:
    """Why this layout cannot run on nodes of this shape; empty when it can."""
    node, gpus_per_replica = topology.node, topology.gpus_per_replica
    tensor_parallel_size, pipeline_parallel_size = topology.tensor_parallel_size, topology.pipeline_parallel_size
    problems = []
    if pipeline_parallel_size > MAX_PIPELINE_PARALLEL_SIZE:
        problems.append(
            f"pipelineParallelSize={pipeline_parallel_size} is invalid: allowed is 1 with the stack's KV connector "
            "(vLLM 0.26's NixlConnector rejects pipeline parallelism on the decode side and sends a prefill's "
            "KV cache from its first stage only); raise tensorParallelSize or use a larger gpuNodeType instead"
        )
    if gpus_per_replica > node.gpus:
        problems.append(
            f"tensorParallelSize={tensor_parallel_size} x pipelineParallelSize={pipeline_parallel_size} = "
            f"{gpus_per_replica} GPUs per replica is invalid: gpuNodeType={node.instance_type!r} has {node.gpus} "
            "GPU(s) and a tensor-parallel group must stay on one node; allowed is at most "
            f"{node.gpus}, or a gpuNodeType with more GPUs"
        )
    elif idle := node.gpus % gpus_per_replica:
        problems.append(
            f"tensorParallelSize={tensor_parallel_size} x pipelineParallelSize={pipeline_parallel_size} = "
            f"{gpus_per_replica} GPUs per replica does not divide the {node.gpus} GPUs of a {node.instance_type}: "
            f"{idle} GPU(s) per node would stay idle; allowed is a divisor of {node.gpus}"
        )
    return problems


# The GPU pod's edge (infra/serving/edge.py): one thread, which took 2-3 % of a CPU under the record's attacks
# (lab/records/2026-12-07-edge-limits/). Its requests are carved from the worker pod's share so the pod still fits
# its node; the Ray container has the rest (ray_worker_cpu, ray_worker_memory_gib).
EDGE_CPU, EDGE_MEMORY_GIB = 1, 1


def ray_worker_cpu(node: InstanceShape) -> int:
    """The worker pod's Ray container: the pod's CPUs less the edge's."""
    return worker_cpu(node) - EDGE_CPU


def ray_worker_memory_gib(node: InstanceShape) -> int:
    """The worker pod's Ray container, where Ray's object store, the engines and their host KV tiers live: the pod's
    memory less the edge's."""
    return worker_memory_gib(node) - EDGE_MEMORY_GIB


def worker_cpu(node: InstanceShape) -> int:
    """Whole CPUs a worker pod can request: allocatable less what the DaemonSets request."""
    return (allocatable(node.vcpus, node.memory_mib, MAX_PODS_BOUND).millicpu - DAEMONSET_CPU_MILLIS) // 1000


def worker_memory_gib(node: InstanceShape) -> int:
    """Whole GiB a worker pod can request: allocatable less what the DaemonSets request."""
    return (allocatable(node.vcpus, node.memory_mib, MAX_PODS_BOUND).memory_mib - DAEMONSET_MEMORY_MIB) // 1024
