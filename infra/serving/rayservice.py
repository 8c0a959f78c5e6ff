"""The RayService manifest (ray.io/v1), built from the stack config as a plain dict."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import yaml

from infra import PROJECT_DIR
from infra.kube.pod_resources import HEAD_RESOURCES, PREPULL_RESOURCES, RAY_AUTOSCALER_RESOURCES
from infra.kube.pod_security import CONTAINER_SECURITY
from infra.kube.scheduling import (
    GPU_TOLERATION,
    SYSTEM_NODE_SELECTOR,
    VLLM_CACHE_GID,
    VLLM_CACHE_HOST_PATH,
    gpu_node_scheduling,
)
from infra.serving import edge, serve_auth
from infra.serving.serve_config import (
    build_serve_config,
    code_packages,
    engine_restart_digest,
    longest_context,
    longest_stream_s,
    serve_app_args,
)
from infra.settings.rules_serving import sets_cluster_deletion_delay
from infra.settings.stack_config import StackConfig
from infra.settings.topology import ray_worker_cpu, ray_worker_memory_gib

SERVE_PORT = edge.EDGE_PORT  # the edge's, in front of Serve's proxy (infra/serving/edge.py)
# The serve load balancer's one listener: TLS on 443 (cloud-provider-aws annotations), TCP to the pods' 8000.
HTTPS_PORT = 443
TLS_CERT_ANNOTATION = "service.beta.kubernetes.io/aws-load-balancer-ssl-cert"
TLS_PORTS_ANNOTATION = "service.beta.kubernetes.io/aws-load-balancer-ssl-ports"
TLS_POLICY_ANNOTATION = "service.beta.kubernetes.io/aws-load-balancer-ssl-negotiation-policy"
# TLS 1.3 and 1.2 only. Without a policy a listener made through the API gets ELBSecurityPolicy-2016-08, which
# still takes TLS 1.0 (https://docs.aws.amazon.com/elasticloadbalancing/latest/network/describe-ssl-policies.html).
TLS_POLICY = "ELBSecurityPolicy-TLS13-1-2-2021-06"
DASHBOARD_PORT = 8265
# What Ray's pods dial on each other, pinned where Ray would pick at random so the NetworkPolicies can name each one
# (docs/security.md#port-by-port).
GCS_PORT = 6379
NODE_MANAGER_PORT = 8076
OBJECT_MANAGER_PORT = 8077
DASHBOARD_AGENT_GRPC_PORT = 8078
RUNTIME_ENV_AGENT_PORT = 8079
DASHBOARD_AGENT_PORT = 52365
WORKER_PORTS = (10002, 19999)
RAY_CLIENT_PORT = 10001
RAY_PORT_PARAMS = {
    "node-manager-port": str(NODE_MANAGER_PORT),
    "object-manager-port": str(OBJECT_MANAGER_PORT),
    "dashboard-agent-grpc-port": str(DASHBOARD_AGENT_GRPC_PORT),
    "runtime-env-agent-port": str(RUNTIME_ENV_AGENT_PORT),
    "dashboard-agent-listen-port": str(DASHBOARD_AGENT_PORT),
    "min-worker-port": str(WORKER_PORTS[0]),
    "max-worker-port": str(WORKER_PORTS[1]),
}
HF_TOKEN_SECRET = "hf-token"
HF_TOKEN_KEY = "HF_TOKEN"
INSTANCE_LABEL = "app.kubernetes.io/instance"
# The labels KubeRay puts on a RayService's clusters and pods (docs/changes.md#the-labels-kuberay-sets).
RAY_CLUSTER_LABEL = "ray.io/cluster"
SERVE_LABEL = "ray.io/serve"
RAY_ORIGINATED_FROM_CR_NAME_LABEL = "ray.io/originated-from-cr-name"
# With newCluster, a digest of the applied cluster spec and of the engine-restarting serve config, so that any such
# change makes KubeRay build a new cluster and the rollout can tell it from the old
# (docs/changes.md#keeping-serving-through-a-cluster-shape-change-newcluster).
CLUSTER_SPEC_ANNOTATION = "ray-llm-eks/cluster-spec-sha256"
UPGRADE_REPLACE, UPGRADE_NEW_CLUSTER = "None", "NewCluster"
WORKER_GROUP = "gpu-workers"
# With Serve autoscaling, KubeRay's in-tree autoscaler (a sidecar in the head pod) adds a worker pod when
# replicas wait for GPUs and removes it once idle, within the worker group's minReplicas..maxReplicas.
RAY_AUTOSCALER = {
    "enableInTreeAutoscaling": True,
    "autoscalerOptions": {
        "upscalingMode": "Default",
        "idleTimeoutSeconds": 300,
        "resources": RAY_AUTOSCALER_RESOURCES,
    },
}
# vLLM moves tensors between processes through /dev/shm; the container default of 64 MiB is too small.
SHM_SIZE = "16Gi"
# vLLM's and Triton's compile caches on the node's disk: an engine restarted there skips torch.compile and the kernel
# builds (docs/cold-start.md#the-compile-caches).
VLLM_CACHE_ROOT = "/var/cache/vllm"
TRITON_CACHE_DIR = f"{VLLM_CACHE_ROOT}/triton"
# NIXL's LIBFABRIC backend and the DLC's NCCL plugin take the EFA provider; Ray forks its workers.
EFA_ENV = {"FI_PROVIDER": "efa", "FI_EFA_FORK_SAFE": "1"}
# The GCS store (infra/serving/gcs_store.py) as the head sees it: a Service of type ExternalName in the serving
# namespace, a DNS alias of the primary's endpoint, so the RayService names a fixed address the stack knows before
# the store exists; the AUTH token in a Secret beside it.
GCS_REDIS_SERVICE = "gcs-redis"
GCS_REDIS_SECRET = "gcs-redis"
GCS_REDIS_PASSWORD_KEY = "password"
GCS_REDIS_PORT = 6379
# The CAs the head trusts for the store's TLS, shipped by the stack (Ray 2.58 trusts only the file RAY_REDIS_CA_CERT
# names) rather than assumed in the image (docs/head-fault-tolerance.md#elasticache-facts, The store's CA).
GCS_REDIS_CA_CONFIG_MAP = "gcs-redis-ca"
GCS_REDIS_CA_KEY = "amazon-trust-services.pem"
GCS_REDIS_CA_MOUNT = "/etc/ray-llm-eks/gcs-redis-ca"
GCS_REDIS_CA_ENV = {"RAY_REDIS_CA_CERT": f"{GCS_REDIS_CA_MOUNT}/{GCS_REDIS_CA_KEY}"}
AMAZON_TRUST_SERVICES = PROJECT_DIR / "vendor" / "amazon-trust-services"


def gcs_redis_ca_bundle() -> str:
    """Amazon Trust Services' root CAs, one PEM file: the vendored certificates one after another (Ray reads a bundle
    of several whole: docs/head-fault-tolerance.md, "Redis over TLS, measured")."""
    return "".join(path.read_text() for path in sorted(AMAZON_TRUST_SERVICES.glob("*.crt")))


def hf_token_env(secret: str = HF_TOKEN_SECRET) -> dict[str, Any]:
    """`HF_TOKEN`, which huggingface_hub reads, from the `HF_TOKEN` key of the Secret named `secret`."""
    return {"name": HF_TOKEN_KEY, "valueFrom": {"secretKeyRef": {"name": secret, "key": HF_TOKEN_KEY}}}


def _env(with_hf_token: bool, extra: dict[str, str]) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [{"name": name, "value": value} for name, value in extra.items()]
    if with_hf_token:
        env.append(hf_token_env())
    return env


def code_volumes(cfg: StackConfig) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The stack code the app loads (infra/serving/code_package.py) and the API keys as files, in every pod: Serve
    may place the ingress and the routers' callers on any node, and the app's runtime_env reaches every replica. A
    Secret or ConfigMap volume (no subPath) is updated in place when the object changes (Kubernetes docs, Secrets:
    "Mounted Secrets are updated automatically"), which is how a rotated key arrives without a restart."""
    # Exactly the zips the app's runtime_env names (serve_config.code_packages), so the two cannot part.
    code = [package.volume() for package in code_packages(serve_app_args(cfg))]
    volumes, mounts = [volume for volume, _ in code], [mount for _, mount in code]
    if cfg.serve_api_key_auth:
        volumes.append({"name": "serve-api-keys", "secret": {"secretName": serve_auth.KEYS_SECRET}})
        mounts.append({"name": "serve-api-keys", "mountPath": serve_auth.KEYS_MOUNT, "readOnly": True})
    return volumes, mounts


def head_group(cfg: StackConfig) -> dict[str, Any]:
    """The head: the Serve controller, the dashboard and GCS. No `HF_TOKEN`: nothing there reads the Hub (the engine
    loads the model's config and weights in its replica, on a worker: Ray 2.58 ray/llm/_internal/serve/engines/vllm/
    vllm_engine.py calls LLMConfig.apply_checkpoint_info, which reads the Hub config)."""
    volumes, mounts = code_volumes(cfg)
    env = _env(False, GCS_REDIS_CA_ENV) if cfg.gcs_redis else []
    if cfg.gcs_redis:  # the CA ConfigMap, read-only
        volumes.append({"name": GCS_REDIS_CA_CONFIG_MAP, "configMap": {"name": GCS_REDIS_CA_CONFIG_MAP}})
        mounts.append({"name": GCS_REDIS_CA_CONFIG_MAP, "mountPath": GCS_REDIS_CA_MOUNT, "readOnly": True})
    return {
        # No model work on the CPU head: its logical CPUs and GPUs are zero.
        "rayStartParams": {"dashboard-host": "0.0.0.0", "num-cpus": "0", "num-gpus": "0", **RAY_PORT_PARAMS},
        "template": {
            "metadata": {"labels": {INSTANCE_LABEL: cfg.ray_service_name}},
            "spec": {
                "nodeSelector": dict(SYSTEM_NODE_SELECTOR),
                # No Kubernetes API call from the head, but Ray's autoscaler sidecar's, which KubeRay adds to this pod.
                "automountServiceAccountToken": cfg.serve_autoscaling,
                "containers": [
                    {
                        "name": "ray-head",
                        "securityContext": dict(CONTAINER_SECURITY),
                        "image": cfg.dlc_image,
                        "ports": [
                            {"containerPort": GCS_PORT, "name": "gcs-server"},
                            {"containerPort": DASHBOARD_PORT, "name": "dashboard"},
                            {"containerPort": RAY_CLIENT_PORT, "name": "client"},
                            {"containerPort": SERVE_PORT, "name": "serve"},
                        ],
                        "resources": HEAD_RESOURCES,
                        **({"env": env} if env else {}),
                        **({"volumeMounts": mounts} if mounts else {}),
                    }
                ],
                **({"volumes": volumes} if volumes else {}),
            },
        },
    }


def serve_edge(cfg: StackConfig) -> edge.Edge:
    return edge.Edge(cfg.serve_max_request_mib)


def worker_group(cfg: StackConfig, with_hf_token: bool, service_account: str | None = None) -> dict[str, Any]:
    """One pod per GPU node, owning all of it: Ray packs the replicas' GPU bundles into it. The edge in front of its
    Serve proxy takes its share of the pod's CPU and memory (infra/serving/edge.py). KubeRay's readiness probe asks
    localhost:8000/-/healthz, the ray container's `serve` port or 8000 without one (kuberay v1.4.0 and v1.7.0 pod.go
    initLivenessAndReadinessProbe: 1.7.0 makes its probes HTTP for Ray 2.53 and later, but a RayService worker's
    readiness stays this command), so it goes through the edge too."""
    edge_proxy = serve_edge(cfg)
    code_pod_volumes, code_mounts = code_volumes(cfg)
    return {
        "groupName": WORKER_GROUP,
        "replicas": cfg.topology.gpu_nodes,
        "minReplicas": cfg.topology.gpu_nodes,
        "maxReplicas": cfg.topology.most_gpu_nodes,
        "rayStartParams": dict(RAY_PORT_PARAMS),
        "template": {
            "metadata": {"labels": {INSTANCE_LABEL: cfg.ray_service_name}},
            "spec": {
                **gpu_node_scheduling(),
                # The model cache's reader (infra/serving/model_cache.py): IRSA credentials for the model's S3 prefix
                # only.
                **({"serviceAccountName": service_account} if service_account else {}),
                # The group that may write the compile cache (infra/kube/scheduling.py VLLM_CACHE_GID).
                "securityContext": {"supplementalGroups": [VLLM_CACHE_GID]},
                # No Kubernetes API call; the model cache's S3 credentials come from EKS's IRSA webhook, which mounts
                # a token of its own (aws-iam-token), not the service account's default one.
                "automountServiceAccountToken": False,
                "containers": [
                    ray_worker_container(cfg, with_hf_token, code_mounts),
                    edge_proxy.container(cfg.dlc_image),
                ],
                "volumes": [
                    {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": SHM_SIZE}},
                    {"name": "vllm-cache", "hostPath": {"path": VLLM_CACHE_HOST_PATH, "type": "DirectoryOrCreate"}},
                    *code_pod_volumes,
                    edge_proxy.volume(),
                ],
            },
        },
    }


def ray_worker_container(cfg: StackConfig, with_hf_token: bool, code_mounts: list[dict[str, Any]]) -> dict[str, Any]:
    """The worker pod's Ray container: the node's GPUs and EFA interfaces, its CPU and memory less the edge's."""
    node = cfg.topology.node
    resources = {
        "cpu": str(ray_worker_cpu(node)),
        "memory": f"{ray_worker_memory_gib(node)}Gi",
        "nvidia.com/gpu": str(node.gpus),
        "vpc.amazonaws.com/efa": str(node.efa_interfaces),
    }
    env = _env(with_hf_token, {**EFA_ENV, "VLLM_CACHE_ROOT": VLLM_CACHE_ROOT, "TRITON_CACHE_DIR": TRITON_CACHE_DIR})
    # NIXL and vLLM advertise this address to the other side of the KV transfer.
    env.insert(0, {"name": "VLLM_HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
    return {
        "name": "ray-worker",
        "image": cfg.dlc_image,
        "resources": {"requests": resources, "limits": resources},
        "env": env,
        # EFA registers pinned memory: libfabric needs to lock it.
        "securityContext": {**CONTAINER_SECURITY, "capabilities": {"add": ["IPC_LOCK"], "drop": ["ALL"]}},
        "volumeMounts": [
            {"name": "dshm", "mountPath": "/dev/shm"},
            {"name": "vllm-cache", "mountPath": VLLM_CACHE_ROOT},
            *code_mounts,
        ],
    }


def cluster_spec_digest(cluster_config: dict[str, Any], serve_config: dict[str, Any]) -> str:
    """The cluster spec and what of the serve config restarts the engines (serve_config.engine_restart_digest)."""
    built_for = {"rayClusterConfig": cluster_config, "engines": engine_restart_digest(serve_config)}
    return hashlib.sha256(json.dumps(built_for, sort_keys=True).encode()).hexdigest()


def with_cluster_spec_digest(cluster_config: dict[str, Any], serve_config: dict[str, Any]) -> dict[str, Any]:
    """The cluster spec with its digest (taken before it is added) on the head's pod template."""
    stamped: dict[str, Any] = json.loads(json.dumps(cluster_config))
    metadata = stamped["headGroupSpec"]["template"].setdefault("metadata", {})
    metadata.setdefault("annotations", {})[CLUSTER_SPEC_ANNOTATION] = cluster_spec_digest(cluster_config, serve_config)
    return stamped


def gcs_fault_tolerance(cfg: StackConfig) -> dict[str, Any]:
    """KubeRay's GCS fault tolerance on the stack's store: KubeRay sets the head's address and password from it,
    a key namespace per RayCluster and the workers' 600 s reconnect timeout
    (docs/head-fault-tolerance.md#what-the-stack-should-set)."""
    return {
        "gcsFaultToleranceOptions": {
            # `rediss://`: Ray 2.58 starts its GCS with TLS to Redis for that scheme (ray/_private/services.py
            # `get_address`, `start_gcs_server`: `--redis_enable_ssl=true`; docs/head-fault-tolerance.md).
            "redisAddress": f"rediss://{GCS_REDIS_SERVICE}.{cfg.namespace}.svc.cluster.local:{GCS_REDIS_PORT}",
            "redisPassword": {"valueFrom": {"secretKeyRef": {"name": GCS_REDIS_SECRET, "key": GCS_REDIS_PASSWORD_KEY}}},
        }
    }


# KubeRay 1.4.0's fixed delay before it deletes the cluster a NewCluster upgrade left; later releases keep it for the
# longest stream instead (docs/changes.md#keeping-serving-through-a-cluster-shape-change-newcluster, step 3).
KUBERAY_DELETION_DELAY_S = 60


def cluster_deletion_delay_s(cfg: StackConfig) -> int:
    """How long KubeRay keeps a RayCluster it dropped: the stack's rayClusterDeletionDelaySeconds where the release
    reads it, else 1.4.0's fixed 60 s."""
    return old_cluster_deletion_delay(cfg).get("rayClusterDeletionDelaySeconds", KUBERAY_DELETION_DELAY_S)


def old_cluster_deletion_delay(cfg: StackConfig) -> dict[str, int]:
    if not (cfg.new_cluster and sets_cluster_deletion_delay(cfg.kuberay_version)):
        return {}
    longest = longest_stream_s(longest_context(cfg.max_model_len, cfg.aggregated_models))
    return {"rayClusterDeletionDelaySeconds": max(KUBERAY_DELETION_DELAY_S, longest)}


def build_rayservice(
    cfg: StackConfig, with_hf_token: bool, model_cache_uri: str | None = None, service_account: str | None = None
) -> dict[str, Any]:
    """`model_cache_uri` and `service_account`: the model cache's copy and the workers' reader account
    (infra/serving/model_cache.py), when the workers load from S3."""
    cluster_config = {
        "rayVersion": cfg.ray_version,
        # Ray's token on its dashboard, Ray client and GCS, generated by KubeRay (docs/ray-token-auth.md#kuberay-170).
        **({"authOptions": {"mode": "token"}} if cfg.ray_token_auth else {}),
        **(gcs_fault_tolerance(cfg) if cfg.gcs_redis else {}),
        **(RAY_AUTOSCALER if cfg.serve_autoscaling else {}),
        "headGroupSpec": head_group(cfg),
        "workerGroupSpecs": [worker_group(cfg, with_hf_token, service_account)],
    }
    serve_config = build_serve_config(serve_app_args(cfg, model_cache_uri))
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {
            "name": cfg.ray_service_name,
            "namespace": cfg.namespace,
            "annotations": {
                # The ServeRollout waits instead: KubeRay's Ready stays true over a failed serve config
                # (docs/changes.md#changing-a-running-stack).
                "pulumi.com/skipAwait": "true",
                # Gone at once, its cluster deleted after it: a foreground delete waits on the cluster KubeRay 1.4.0
                # builds anew; 1.7.0's finalizer holds the RayService only until its RayClusters are deleted
                # (docs/kuberay-versions.md#c-deleting-a-rayservice).
                "pulumi.com/deletionPropagationPolicy": "background",
                # Pulumi's next apply takes serveConfigV2 back from the rollout's rollback instead of failing on the
                # field conflict (docs/changes.md#rolling-back).
                "pulumi.com/patchForce": "true",
            },
        },
        "spec": {
            # replace: KubeRay never starts a second cluster, which the GPU node group is not sized for; newCluster: it
            # builds the new one beside the active one (docs/changes.md).
            "upgradeStrategy": {"type": UPGRADE_NEW_CLUSTER if cfg.new_cluster else UPGRADE_REPLACE},
            **old_cluster_deletion_delay(cfg),
            # The head's proxy dies with the head, the workers' answer through its restart: serve from the workers only
            # (docs/head-fault-tolerance.md#kuberay-140-and-170).
            "excludeHeadPodFromServeSvc": True,
            "serveConfigV2": yaml.safe_dump(serve_config, sort_keys=False),
            "rayClusterConfig": with_cluster_spec_digest(cluster_config, serve_config)
            if cfg.new_cluster
            else cluster_config,
        },
    }


def build_serve_load_balancer(cfg: StackConfig) -> dict[str, Any]:
    """An NLB in front of the pods that serve, for clients outside the cluster (serveExposure): HTTPS only.

    EKS's cloud provider makes one TLS listener from the annotations and forwards to the Service's NodePort, which it
    opens to loadBalancerSourceRanges or else to everyone, so serveSourceCidrs is required for every exposure
    (docs/security.md#an-exposed-endpoint-https-and-api-keys)."""
    if not cfg.serve_certificate_arn:
        # cloud-provider-aws makes a TLS listener only for a non-empty certificate (aws.go): never a plain 443.
        raise ValueError("an exposed serve endpoint needs serveCertificateArn: its only listener is TLS")
    annotations = {
        "service.beta.kubernetes.io/aws-load-balancer-type": "nlb",
        TLS_CERT_ANNOTATION: cfg.serve_certificate_arn,
        TLS_PORTS_ANNOTATION: str(HTTPS_PORT),
        TLS_POLICY_ANNOTATION: TLS_POLICY,
    }
    if cfg.serve_exposure == "internal":
        annotations["service.beta.kubernetes.io/aws-load-balancer-internal"] = "true"
    spec: dict[str, Any] = {
        "type": "LoadBalancer",
        # The pods whose Serve proxy is healthy; with newCluster serve_app.py adds the active cluster's name
        # (docs/changes.md#keeping-serving-through-a-cluster-shape-change-newcluster, step 5).
        "selector": {INSTANCE_LABEL: cfg.ray_service_name, SERVE_LABEL: "true"},
        "ports": [{"name": "https", "port": HTTPS_PORT, "targetPort": SERVE_PORT, "protocol": "TCP"}],
    }
    if cfg.serve_source_cidrs:
        spec["loadBalancerSourceRanges"] = list(cfg.serve_source_cidrs)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": f"{cfg.ray_service_name}-serve-lb",
            "namespace": cfg.namespace,
            "annotations": annotations,
        },
        "spec": spec,
    }


# The header a client sends when the endpoint asks for a key, its value read from the stack's secret output.
API_KEY_HEADER = "Authorization: Bearer $(pulumi stack output --show-secrets serveApiKey)"


def endpoint_outputs(cfg: StackConfig) -> dict[str, str]:
    """How to reach the OpenAI-compatible API once the RayService is ready."""
    service = f"{cfg.ray_service_name}-serve-svc"  # the Service KubeRay creates once the Serve app is healthy
    key_header = f' --header "{API_KEY_HEADER}"' if cfg.serve_api_key_auth else ""
    return {
        "serveEndpoint": f"http://{service}.{cfg.namespace}.svc.cluster.local:{SERVE_PORT}/v1",
        "portForwardCommand": f"kubectl port-forward -n {cfg.namespace} svc/{service} {SERVE_PORT}:{SERVE_PORT}",
        "modelId": cfg.model_id,
        "curlModelsCommand": f"curl --silent{key_header} http://127.0.0.1:{SERVE_PORT}/v1/models",
    }


# --- the image pre-puller: the serving image on every node before a Ray pod is placed there ---

PREPULL_NAME = "image-prepull"
PREPULL_LABELS = {"app.kubernetes.io/name": PREPULL_NAME}
# `nobody`: the pre-puller's container only sleeps.
NOBODY = 65534


def build_prepull_daemonset(image: str, namespace: str) -> dict[str, Any]:
    """The apps/v1 DaemonSet that keeps `image`, the Ray pods' image, on every node, as unprivileged as a pod gets.

    Each node starts its pull as it joins, and the running container keeps the image from garbage collection; it
    tolerates the GPU taint and selects no node (docs/model-cache.md#model-cache-and-cold-start has the sources)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": PREPULL_NAME,
            "namespace": namespace,
            # Nothing waits for it: a Ray pod placed before the pull ends pulls the image itself.
            "annotations": {"pulumi.com/skipAwait": "true"},
        },
        "spec": {
            "selector": {"matchLabels": dict(PREPULL_LABELS)},
            # A new dlcImage is pulled on every node at once, not one node after another.
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%"}},
            "template": {
                "metadata": {"labels": dict(PREPULL_LABELS)},
                "spec": {
                    "tolerations": [dict(GPU_TOLERATION)],
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    # `sleep` as PID 1 ignores SIGTERM: without this a deletion would wait out the default 30 s.
                    "terminationGracePeriodSeconds": 1,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": NOBODY,
                        "runAsGroup": NOBODY,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [
                        {
                            "name": "image",
                            "image": image,
                            "command": ["sleep", "infinity"],
                            "resources": PREPULL_RESOURCES,
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"]},
                            },
                        }
                    ],
                },
            },
        },
    }
