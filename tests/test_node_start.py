"""What a GPU or system node does before its pods start (issues 23 and 39): its root volume as fast as the image pull
asks, the parallel pull turned on in its user data, and vLLM's and Triton's compile caches kept on the node."""

from __future__ import annotations

import base64
import email

import yaml

from infra.kube.scheduling import VLLM_CACHE_HOST_PATH
from infra.nodes.node_groups import GPU_ROOT_IOPS, GPU_ROOT_THROUGHPUT_MIBPS, SYSTEM_ROOT_THROUGHPUT_MIBPS
from infra.serving.rayservice import TRITON_CACHE_DIR, VLLM_CACHE_ROOT
from tests.rayservice_parts import ray_container, worker_group


def gpu_launch_template(run) -> dict:
    return launch_template(run, "gpu-nodes-gpu")


def launch_template(run, name: str) -> dict:
    return run.get("aws:ec2/launchTemplate:LaunchTemplate", name).inputs


def test_the_gpu_root_volume_has_the_throughput_fast_image_pull_asks_for(dev):
    """nodeadm's guide: at least 600 MiB/s, up to 1000 MiB/s (awslabs/amazon-eks-ami nodeadm/doc/examples.md);
    gp3 allows at most 0.25 MiB/s per provisioned IOPS (https://docs.aws.amazon.com/ebs/latest/userguide/
    general-purpose.html)."""
    (mapping,) = gpu_launch_template(dev)["blockDeviceMappings"]
    assert mapping["ebs"]["throughput"] == GPU_ROOT_THROUGHPUT_MIBPS >= 600
    assert mapping["ebs"]["iops"] == GPU_ROOT_IOPS >= GPU_ROOT_THROUGHPUT_MIBPS / 0.25


def user_data_parts(run, template: str = "gpu-nodes-gpu") -> dict[str, str]:
    message = email.message_from_string(base64.b64decode(launch_template(run, template)["userData"]).decode())
    assert message.is_multipart()
    return {part.get_content_type(): part.get_payload() for part in message.get_payload()}


def test_the_gpu_nodes_pull_in_parallel(dev):
    """The FastImagePull feature gate turns on the SOCI snapshotter's parallel pull and unpack
    (nodeadm/internal/containerd/config.go UseSOCISnapshotter); a launch template's NodeConfig is an
    application/node.eks.aws part of MIME multi-part user data (EKS user guide, launch templates)."""
    node_config = yaml.safe_load(user_data_parts(dev)["application/node.eks.aws"])
    assert node_config["apiVersion"] == "node.eks.aws/v1alpha1" and node_config["kind"] == "NodeConfig"
    assert node_config["spec"]["featureGates"] == {"FastImagePull": True}


def test_the_system_nodes_pull_in_parallel_too(dev):
    """The Ray head (and the mirror Job) run the DLC image on a system node: the same feature gate there, which nodeadm
    applies on nodes of 4 vCPUs and 7 GiB or more (nodeadm/internal/containerd/config.go UseSOCISnapshotter; the
    default m7i.xlarge has 4 and 16 GiB), on at least the 600 MiB/s its guide asks for (nodeadm/doc/examples.md),
    which gp3's baseline 3000 IOPS carry at 0.25 MiB/s each (https://docs.aws.amazon.com/ebs/latest/userguide/
    general-purpose.html)."""
    node_config = yaml.safe_load(user_data_parts(dev, "system-nodes-system")["application/node.eks.aws"])
    assert node_config["spec"]["featureGates"] == {"FastImagePull": True}
    (mapping,) = launch_template(dev, "system-nodes-system")["blockDeviceMappings"]
    assert 600 <= mapping["ebs"]["throughput"] == SYSTEM_ROOT_THROUGHPUT_MIBPS <= 3000 * 0.25
    assert "iops" not in mapping["ebs"]


def test_the_compile_cache_lives_on_the_node(dev):
    """vLLM keys its compile cache by config, code and compiler under VLLM_CACHE_ROOT
    (vllm/compilation/backends.py), so a cache on the node serves the next engine pod there."""
    spec = worker_group(dev)["template"]["spec"]
    (volume,) = [v for v in spec["volumes"] if v["name"] == "vllm-cache"]
    assert volume["hostPath"]["path"] == VLLM_CACHE_HOST_PATH
    container = ray_container(spec)
    assert {"name": "vllm-cache", "mountPath": VLLM_CACHE_ROOT} in container["volumeMounts"]
    assert {"name": "VLLM_CACHE_ROOT", "value": VLLM_CACHE_ROOT} in container["env"]


def test_tritons_own_cache_lives_on_the_node_too(dev):
    """vLLM 0.26 points only Inductor's cache under VLLM_CACHE_ROOT on its default path: with
    VLLM_USE_STANDALONE_COMPILE=1 (vllm/envs.py) make_compiler picks InductorStandaloneAdaptor, whose initialize_cache
    sets no environment (vllm/compilation/backends.py, compiler_interface.py), and the AOT path sets
    TORCHINDUCTOR_CACHE_DIR alone (vllm/compilation/decorators.py). Triton's kernels outside Inductor and the
    autotuning results vllm/env_override.py turns on go to TRITON_CACHE_DIR, or ~/.triton/cache in the container,
    which a restarted pod loses."""
    container = ray_container(worker_group(dev)["template"]["spec"])
    assert {"name": "TRITON_CACHE_DIR", "value": TRITON_CACHE_DIR} in container["env"]
    assert TRITON_CACHE_DIR.startswith(VLLM_CACHE_ROOT + "/")
