"""The cold-start model: what `pulumi up` (and every node replacement or scale-out) waits for on a GPU node before
its engines serve, per step, before and after the model cache (issue 23), from cited figures.

./.venv-test/bin/python -m tools.cold_start --write  # rewrites the table in docs/model-cache.md (a test compares)

Each figure says where it comes from and whether it is an estimate; a step's seconds are its bytes over the
slowest rate on its path. The GPU proof (tools/s3_load.py) measures the S3 fetch, the two cold loads and the restart
on the caches on one host.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

from infra.nodes.node_groups import GPU_ROOT_THROUGHPUT_MIBPS
from infra.settings.changes import SURGE_MINUTES_PER_GPU_NODE
from tools.project import PROJECT_DIR, replace_generated_block

GB = 1e9
MIB = 2**20


@dataclass(frozen=True)
class Figure:
    value: float
    unit: str
    source: str
    estimate: bool = False

    def cell(self) -> str:
        return f"{self.value:g} {self.unit}{' (estimate)' if self.estimate else ''}"


FIGURES = {
    "weights": Figure(
        18.82,
        "GB",
        "the default model's safetensors, 17.53 GiB (vLLM's 'Checkpoint size', docs/gpu-end-to-end.md; "
        "tools/offline_hub/Qwen3.5-9B.tensors.json)",
    ),
    "image": Figure(
        20,
        "GB",
        "the Ray Serve LLM DLC image, compressed; not measured here (issue 23: 'tens of GB')",
        estimate=True,
    ),
    "network": Figure(25, "Gbps", "g6.8xlarge network bandwidth (https://aws.amazon.com/ec2/instance-types/g6/)"),
    "instance_ebs": Figure(16, "Gbps", "g6.8xlarge EBS bandwidth (https://aws.amazon.com/ec2/instance-types/g6/)"),
    "gp3_default": Figure(
        125,
        "MiB/s",
        "gp3 baseline throughput (https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html)",
    ),
    "gp3_set": Figure(
        GPU_ROOT_THROUGHPUT_MIBPS, "MiB/s", "the GPU root volume's throughput now (infra/nodes/node_groups.py)"
    ),
    "uncached_pull": Figure(
        9.5 / 334 * 1000,
        "MB/s",
        "a 9.5 GB image pulled uncached in 334 s (terraform-aws-eks-blueprints, ML container cache), the default "
        "containerd pull",
    ),
    "parallel_unpack": Figure(
        300,
        "MB/s",
        "SOCI parallel pull and unpack (FastImagePull), bounded by gzip decompression (unpigz) and the volume",
        estimate=True,
    ),
    "hub": Figure(
        100,
        "MB/s",
        "huggingface_hub's download through the NAT gateway (one flow per file; 5 Gbps per flow outside a "
        "placement group, https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-network-bandwidth.html)",
        estimate=True,
    ),
    "s3_per_connection": Figure(
        90,
        "MB/s",
        "one S3 GET connection in region (S3 performance guidelines, 'Use byte-range fetches' and parallel "
        "connections)",
        estimate=True,
    ),
    "s3_connections": Figure(
        10,
        "GETs",
        "ranged GETs at once for one file: Ray's S3 downloader calls boto3's download_file, a thread per file "
        "(ray/llm/_internal/common/utils/cloud_filesystem/s3_filesystem.py), whose TransferConfig splits a file "
        "above 8 MiB into parts fetched 10 at a time (boto3/s3/transfer.py); more files add more",
    ),
    "to_gpu": Figure(3.4, "s", "vLLM's model load from the page cache, measured (docs/gpu-end-to-end.md, session C)"),
    "compile": Figure(
        165,
        "s",
        "vLLM's engine init with cold caches (torch.compile, the first profiling run that builds the kernels, KV "
        "cache, CUDA graphs): 2.5 to 3 min in the serve runs (docs/gpu-end-to-end.md), 118 to 162 s in tools.s3_load "
        "(docs/cold-start.md)",
    ),
    "compile_cached": Figure(
        11.35,
        "s",
        "the same init on the node's caches (VLLM_CACHE_ROOT, TRITON_CACHE_DIR), measured against 117.85 s cold on "
        "one host: torch.compile 3.3 s, the first profiling run 0.8 s (docs/cold-start.md, second run)",
    ),
    "node_launch": Figure(
        120,
        "s",
        "EC2 launch, AL2023 boot and the kubelet's registration of a GPU node the Cluster Autoscaler adds; not "
        "measured here (the autoscaler gives a node up after max-node-provision-time, 15 min: "
        "vendor/cluster-autoscaler-chart-9.59.0/values.yaml)",
        estimate=True,
    ),
    "deploy_to_running": Figure(
        297,
        "s",
        "Serve's deploy of the PD app to RUNNING on loaded GPUs, the longest of 250 to 297 s measured on a fresh "
        "machine (docs/gpu-end-to-end.md, fourth session): Ray replicas, vLLM import, model load, compile",
    ),
    "cluster_deletion_delay": Figure(
        60,
        "s",
        "KubeRay 1.4.0 deletes the old RayCluster 60 s after the switch (vendor/kuberay-v1.4.0/"
        "rayservice_controller.go RayClusterDeletionDelayDuration, cleanUpRayClusterInstance)",
    ),
    "scale_down_unneeded": Figure(
        600,
        "s",
        "the Cluster Autoscaler removes a node once unneeded for scale-down-unneeded-time, 10 min by default "
        "(vendor/cluster-autoscaler-chart-9.59.0/values.yaml extraArgs; the stack sets none)",
    ),
}


def _rate_mb_s(name: str) -> float:
    figure = FIGURES[name]
    return {
        "Gbps": figure.value * 1000 / 8,
        "MiB/s": figure.value * MIB / 1e6,
        "MB/s": figure.value,
    }[figure.unit]


def seconds(gigabytes: float, *rates: str) -> float:
    """Bytes over the slowest of the rates on the path."""
    return gigabytes * GB / 1e6 / min(_rate_mb_s(rate) for rate in rates)


@dataclass(frozen=True)
class Step:
    name: str
    before: float
    after: float
    basis: str


def new_node_steps() -> list[Step]:
    """A GPU node that joins (first `pulumi up`, a replacement, a scale-out), from scheduled pod to loaded model."""
    weights, image = FIGURES["weights"].value, FIGURES["image"].value
    s3_parallel = FIGURES["s3_per_connection"].value * FIGURES["s3_connections"].value
    return [
        Step(
            "image pull",
            seconds(image, "uncached_pull", "gp3_default"),
            seconds(image, "parallel_unpack", "gp3_set", "instance_ebs", "network"),
            "image / min(pull rate, root volume, instance EBS, network)",
        ),
        Step(
            "weights to the node",
            seconds(weights, "hub", "gp3_default"),
            weights * GB / 1e6 / min(s3_parallel, _rate_mb_s("gp3_set"), _rate_mb_s("network")),
            "weights / min(Hub or S3 x connections, root volume, network)",
        ),
        Step("weights to the GPU", FIGURES["to_gpu"].value, FIGURES["to_gpu"].value, "measured, page cache"),
        Step(
            "compile",
            FIGURES["compile"].value,
            FIGURES["compile"].value,
            "a new node has no compile cache yet",
        ),
    ]


def restarted_pod_steps() -> list[Step]:
    """An engine pod started again on a node that ran one (RayService replaced): the image is on the node."""
    new = {step.name: step for step in new_node_steps()}
    return [
        Step("image pull", 0, 0, "already on the node"),
        new["weights to the node"],
        new["weights to the GPU"],
        Step("compile", FIGURES["compile"].value, FIGURES["compile_cached"].value, "the node's compile cache"),
    ]


def surge_steps() -> list[Step]:
    """What one GPU node of a clusterUpgradeStrategy newCluster upgrade runs beside the active cluster's (the `after`
    column: with the model cache), from its launch until the Cluster Autoscaler removes the old cluster's node: the
    extra GPU node time of an upgrade, per node of the new cluster."""
    new = {step.name: step for step in new_node_steps()}
    seconds_of = {name: FIGURES[name].value for name in ("node_launch", "deploy_to_running")}
    delay, unneeded = FIGURES["cluster_deletion_delay"].value, FIGURES["scale_down_unneeded"].value
    return [
        Step("node launch and join", seconds_of["node_launch"], seconds_of["node_launch"], "estimate"),
        Step("image pull", new["image pull"].after, new["image pull"].after, "as a new GPU node"),
        Step("weights to the node", new["weights to the node"].after, new["weights to the node"].after, "from S3"),
        Step("deploy to RUNNING", seconds_of["deploy_to_running"], seconds_of["deploy_to_running"], "measured"),
        Step("switch, then the old cluster's deletion", delay, delay, "KubeRay's delay"),
        Step("the old node unneeded, then removed", unneeded, unneeded, "the Cluster Autoscaler's default"),
    ]


def surge_minutes() -> int:
    """The surge per GPU node in whole minutes, rounded up: what infra/settings/changes.py says."""
    return math.ceil(sum(step.after for step in surge_steps()) / 60)


def mirror_seconds() -> float:
    """The first `pulumi up` only, before the RayService: the mirror Job pulls the DLC image onto a system node (its
    launch template has neither FastImagePull nor a faster root volume) and copies the Hub repo into the bucket
    through that node's disk."""
    pull = seconds(FIGURES["image"].value, "uncached_pull", "gp3_default")
    return pull + seconds(FIGURES["weights"].value, "hub", "gp3_default")


def first_deploy_seconds() -> float:
    """The first `pulumi up`'s app, from the serving namespace's creation to RUNNING, with the model cache: the
    mirror, then the new GPU node's image pull and the weights from S3, then Serve's deploy to RUNNING (replicas,
    vLLM import, model load, compile). What the alerts' first-deploy case plays (tests/test_alert_rules.py)."""
    new = {step.name: step for step in new_node_steps()}
    pulls = new["image pull"].after + new["weights to the node"].after
    return mirror_seconds() + pulls + FIGURES["deploy_to_running"].value


BEGIN_MARKER = "<!-- cold-start:begin (generated by python -m tools.cold_start) -->"
END_MARKER = "<!-- cold-start:end -->"
# The page the table is written into, between the markers.
REFERENCE_PAGE = PROJECT_DIR / "docs" / "model-cache.md"


def _rows(title: str, steps: list[Step]) -> list[str]:
    rows = [f"| **{title}** | | | |"]
    rows += [f"| {s.name} | {s.before:.0f} | {s.after:.0f} | {s.basis} |" for s in steps]
    rows.append(f"| total | {sum(s.before for s in steps):.0f} | {sum(s.after for s in steps):.0f} | |")
    return rows


def markdown() -> str:
    lines = [
        BEGIN_MARKER,
        "| step | before (s) | after (s) | how |",
        "|---|---|---|---|",
        *_rows("a new GPU node", new_node_steps()),
        *_rows("an engine pod restarted on its node", restarted_pod_steps()),
        f"| **first `pulumi up` only**: the mirror Job, Hub to S3 | 0 | {mirror_seconds():.0f} | image / min(pull "
        "rate, a system node's root volume) + weights / min(Hub, that volume) |",
        f"| **first `pulumi up`, serving namespace to RUNNING** | | {first_deploy_seconds():.0f} | the mirror + image "
        "pull + weights from S3 + `deploy_to_running`; the alerts stay silent through it (docs/observability.md) |",
        *_rows("one GPU node of a newCluster upgrade's surge (modelled)", surge_steps()),
        f"| **surge per GPU node, minutes** | | {surge_minutes()} | rounded up; infra/settings/changes.py says "
        f"{SURGE_MINUTES_PER_GPU_NODE} |",
        "",
        "| figure | value | source |",
        "|---|---|---|",
        *(f"| `{name}` | {figure.cell()} | {figure.source} |" for name, figure in FIGURES.items()),
        END_MARKER,
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="replace the table in docs/model-cache.md")
    if parser.parse_args().write:
        replace_generated_block(REFERENCE_PAGE, markdown())
    else:
        print(markdown())
