"""The settings of the serve app (the model, the engines, Ray and KubeRay, the endpoint): rows of `table.py`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from infra.settings.autoscaling import NEW_NODE_ENGINE_START_S, PERCENTILES, WARM_ENGINE_START_S
from infra.settings.changes import (
    AWS_IN_PLACE,
    CHART_ROLLED,
    GCS_STORE,
    GPU_NODES_SCALED,
    KEYS_RELOADED,
    LOAD_BALANCER,
    MODEL_MIRRORED,
    MONITORING,
    NOTHING_RUNNING,
    RAYSERVICE_NEW_CLUSTER,
    RAYSERVICE_REPLACED,
    SECRET_UPDATED,
    SERVE_IN_PLACE,
    Effect,
)
from infra.settings.kinds import (
    BOOLEAN,
    CACHE_NODE_TYPE_PATTERN,
    CERTIFICATE_ARN_PATTERN,
    CHART_VERSION_PATTERN,
    CLIENT_CIDR_LIST,
    CLUSTER_UPGRADE_STRATEGIES,
    DEFAULT_KUBERAY_VERSION,
    DNS_LABEL_ALLOWED,
    DNS_LABEL_PATTERN,
    GCS_REDIS,
    HEAD_FAULT_TOLERANCE_MODES,
    IMAGE_PATTERN,
    MAINTENANCE_WINDOW_ALLOWED,
    MAINTENANCE_WINDOW_PATTERN,
    MAX_MODEL_LEN,
    MAX_SERVE_READY_MINUTES,
    NO_SPACE_PATTERN,
    RAYSERVICE_NAME_PATTERN,
    REPLACE,
    SECRET,
    SEMVER_PATTERN,
    VALIDATED_KUBERAY_VERSIONS,
    Choice,
    Integer,
    Kind,
    Setting,
    StringList,
    Text,
    client_cidr,
)
from infra.settings.prefix_caching import PREFIX_CACHING_MODES
from infra.settings.quantization import KV_CACHE_DTYPES, QUANTIZATIONS

SERVE_ONLY = (SERVE_IN_PLACE,)
SIDE_SIZE = (GPU_NODES_SCALED, RAYSERVICE_REPLACED)
AUTOSCALING_ONLY = " (0 when serveAutoscaling is false)"
VLLM_DEFAULT = " (0 leaves vLLM's default)"
LATENCY_POLICY_NOTE = (
    "the RayService is replaced when the first side starts, or the last stops, scaling on a latency objective: the "
    "pods mount the policy's code; another objective changes only the serve config"
)


def per_side(
    key: str, kind: Kind, default: Any, description: str, *, feeds: str, effects: tuple[Effect, ...]
) -> tuple[Setting, ...]:
    """The same row for each side of the PD pair, prefill first: `{side}` (or `{Side}`) in its texts names the side."""
    return tuple(
        Setting(
            key.format(side=side),
            kind,
            default,
            description.format(side=side, Side=side.capitalize()),
            effects,
            feeds=feeds.format(side=side),
        )
        for side in ("prefill", "decode")
    )


SERVING: Mapping[str, tuple[Setting, ...]] = {
    "serving": (
        Setting(
            "dlcImage",
            Text(IMAGE_PATTERN, "an image reference pinned by tag or digest", optional=True),
            "",
            "Ray Serve LLM container image; empty uses ray:serve-llm-cuda-v1.0 from the region's Deep Learning "
            "Containers registry (<account>.dkr.ecr.<region>.amazonaws.com).",
            effects=(MODEL_MIRRORED, RAYSERVICE_REPLACED),
            change_note="the mirror Job runs in the same image, so it runs again; with the files already in the bucket "
            "it only checks them. The image pre-puller restarts on the new image, so every node pulls it at once, "
            "beside the RayService's change",
        ),
        Setting(
            "kuberayVersion",
            Text(SEMVER_PATTERN, "a version such as 1.4.0"),
            DEFAULT_KUBERAY_VERSION,
            "Version of the kuberay-operator Helm chart; only releases whose CRDs are vendored "
            f"({', '.join(VALIDATED_KUBERAY_VERSIONS)}). 1.4.0 has no Ray token: with rayAuthMode auto it turns the "
            "token off.",
            effects=(CHART_ROLLED, RAYSERVICE_REPLACED),
            change_note=(
                "the stack applies the release's RayService and RayCluster CRDs first (helm upgrade never upgrades a "
                "chart's crds/), then the operator restarts on the new image (seconds with no operator; Ray keeps "
                "serving) and updates the running RayCluster in place for its new version without touching its pods; "
                "with rayAuthMode auto, 1.4.0 to 1.7.0 also turns Ray's token on, a cluster-spec change: the "
                "RayService is replaced (an outage until the new cluster serves). To move without it, set rayAuthMode "
                "disabled first and turn the token on in a later `pulumi up`; with newCluster always move in those two "
                "steps, since a new spec that reaches the new operator before its first reconcile is written into the "
                "running RayCluster, whose pods keep the old one (docs/kuberay-versions.md)"
            ),
        ),
        Setting(
            "rayAuthMode",
            Choice(("auto", "token", "disabled")),
            "auto",
            "Ray's own token authentication on its dashboard, Ray client and GCS (KubeRay's authOptions, a token "
            "KubeRay generates per RayCluster): token (needs kuberayVersion 1.5.1 or later), disabled (the serving "
            "namespace's NetworkPolicies alone guard them), or auto (token where kuberayVersion has it, else "
            "disabled, which the preview says).",
            feeds="ray_token_auth",
            effects=(RAYSERVICE_REPLACED,),
            change_note="the RayCluster's spec gains or loses authOptions, and a new cluster gets a new token",
        ),
        Setting(
            "headFaultTolerance",
            Choice(HEAD_FAULT_TOLERANCE_MODES),
            GCS_REDIS,
            "GCS fault tolerance for the Ray head: redis (an ElastiCache for Valkey primary and replica the stack "
            "makes, TLS and an AUTH token, reachable from the system nodes only: a restarted head reloads the "
            "cluster and the GPU workers keep serving through it) or off (no store: a head restart restarts every "
            "GPU worker, which loads the model again).",
            effects=(GCS_STORE, MONITORING, RAYSERVICE_REPLACED),
            change_note=(
                "the RayCluster's spec gains or loses gcsFaultToleranceOptions and the head-restart alert its "
                "severity; to redis the ElastiCache group is created first (minutes) and the RayService, which waits "
                "for it, is left as it was when that fails; to off the group is deleted once the RayService no longer "
                "names it"
            ),
        ),
        Setting(
            "gcsRedisNodeType",
            Text(CACHE_NODE_TYPE_PATTERN, "an ElastiCache node type such as cache.t4g.micro"),
            "cache.t4g.micro",
            "ElastiCache node type of the head's GCS store (headFaultTolerance redis), for its primary and replica.",
            effects=(GCS_STORE,),
            change_note="ElastiCache scales the nodes in place (online) and switches the primary at the end",
        ),
        Setting(
            "gcsRedisMaintenanceWindow",
            Text(MAINTENANCE_WINDOW_PATTERN, MAINTENANCE_WINDOW_ALLOWED),
            "sun:06:00-sun:07:00",
            "Weekly maintenance window of the head's GCS store (headFaultTolerance redis), ddd:hh24:mi-ddd:hh24:mi "
            "in UTC, at least 60 minutes: ElastiCache patches there, failing the primary over, which restarts the Ray "
            "head (the GPU workers ride through it). Unset, ElastiCache would pick a random hour of the week.",
            effects=(AWS_IN_PLACE,),
        ),
        Setting(
            "allowUnvalidatedKuberayVersion",
            BOOLEAN,
            False,
            "Deploy a kuberayVersion the RayService was not validated against (preview warns).",
            feeds="kuberay_version (whether an unvalidated one is allowed)",
            effects=(NOTHING_RUNNING,),
        ),
        Setting(
            "clusterUpgradeStrategy",
            Choice(CLUSTER_UPGRADE_STRATEGIES),
            REPLACE,
            "How a change to the RayService's cluster spec (image, Ray version, replicas, worker resources, a token or "
            "the API keys added or removed) reaches a running stack: replace (the RayService is deleted and created "
            "again: a full outage, no extra nodes) or newCluster (KubeRay's zero-downtime upgrade: a second RayCluster "
            "beside the active one, which needs a second Ray head on the system nodes and as many GPU nodes again, "
            "added by the Cluster Autoscaler; see Changing a running stack).",
            effects=(LOAD_BALANCER, CHART_ROLLED, GPU_NODES_SCALED, RAYSERVICE_NEW_CLUSTER, RAYSERVICE_REPLACED),
            change_note=(
                "to newCluster: the RayService is updated in place and KubeRay builds a first new cluster beside the "
                "running one (its spec gains the digest annotation), the GPU node group's maximum grows by the surge "
                "and the Cluster Autoscaler is installed, and the NLB's selector names the active cluster; back to "
                "replace: the RayService is replaced"
            ),
        ),
        Setting(
            "rayVersion",
            Text(SEMVER_PATTERN, "a version such as 2.58.0"),
            "2.58.0",
            "Ray version of the image (RayService spec.rayClusterConfig.rayVersion); must be 2.58.0 with the default "
            "image.",
            effects=(RAYSERVICE_REPLACED,),
        ),
        Setting(
            "rayServiceName",
            Text(
                RAYSERVICE_NAME_PATTERN,
                "1-40 characters of lower-case letters, digits and '-', starting with a letter and ending with a "
                "letter or digit (a DNS label that prefixes the RayCluster's own)",
            ),
            "ray-llm",
            "Name of the RayService; the endpoint Service is <name>-serve-svc.",
            effects=(RAYSERVICE_REPLACED, LOAD_BALANCER, MONITORING),
        ),
        Setting(
            "namespace",
            Text(DNS_LABEL_PATTERN, DNS_LABEL_ALLOWED),
            "inference",
            "Kubernetes namespace of the RayService; not one the stack creates for another part (kuberay-system, "
            "monitoring, model-cache).",
            effects=(RAYSERVICE_REPLACED, LOAD_BALANCER, MONITORING),
        ),
        Setting(
            "modelId",
            Text(NO_SPACE_PATTERN, "a non-empty name without spaces"),
            "qwen3.5-9b",
            "Model id exposed on the OpenAI-compatible API.",
            effects=SERVE_ONLY,
            change_note=(
                "Ray Serve LLM names each engine deployment after the model id, so a new id replaces the deployment "
                "whatever the replica count: no rolling update"
            ),
        ),
        Setting(
            "modelSource",
            Text(),
            "Qwen/Qwen3.5-9B",
            "Where the weights come from (Hugging Face repo id, s3:// URI or a path in the image).",
            effects=(MODEL_MIRRORED, MONITORING, SERVE_IN_PLACE),
            change_note="with modelCache on, a Hugging Face repo is mirrored into the cache first; an s3:// source is "
            "read as it is; between the two the alerts' first-deploy deadline gains or loses the mirror's timeout",
        ),
        Setting(
            "models",
            Text(),
            "[]",
            "Several models behind the one endpoint, as a JSON list (docs/models.md): each with id, source, "
            "serving (pd or aggregated), and for an aggregated model replicas, tensorParallelSize, maxNumSeqs, "
            "placement (own-nodes or spare-gpus) and LoRA adapters kept under adapterPrefix in the model cache "
            "bucket. Empty: the one model of modelId/modelSource; a list names every model, one of them pd, and "
            "leaves modelId and modelSource at their defaults (the pd model's engines stay the keys').",
            effects=(SERVE_IN_PLACE, *SIDE_SIZE),
            change_note=(
                "the models are one Serve application, whose args Serve 2.58 restarts every replica for: adding, "
                "removing or changing a model restarts every engine, the PD pair's too (on own-nodes the GPU node "
                "group and the worker pods resize, which replaces the RayService); an adapter uploaded under "
                "adapterPrefix, or one more name in adapters, changes no serve config and restarts nothing"
            ),
        ),
        Setting(
            "maxModelLen",
            Integer(
                1,
                " tokens (2^20: more KV cache than one GPU of the supported types holds for an 8B model)",
                maximum=MAX_MODEL_LEN,
            ),
            4096,
            "vLLM max_model_len (context length) of prefill and decode, 1 to 1048576 tokens.",
            effects=SERVE_ONLY,
        ),
        Setting(
            "languageModelOnly",
            BOOLEAN,
            True,
            "Serve text only (vLLM language_model_only): a multimodal model's vision tower is neither loaded nor "
            "profiled, and requests with images are refused. The default Qwen3.5-9B at maxModelLen 4096 fits a g6's "
            "L4 only this way (lab/records/gpu-end-to-end.md); false needs a larger GPU.",
            effects=SERVE_ONLY,
        ),
        *per_side(
            "{side}Replicas",
            Integer(1),
            1,
            "{Side} replicas (vLLM engines of tensorParallelSize x pipelineParallelSize GPUs each).",
            feeds="{side}.replicas",
            effects=(SERVE_IN_PLACE, *SIDE_SIZE),
        ),
        Setting(
            "tensorParallelSize",
            Integer(1),
            1,
            "vLLM tensor_parallel_size of every replica, both sides; at most the GPUs of one gpuNodeType node, and a "
            "divisor of them.",
            feeds="topology.tensor_parallel_size",
            effects=(SERVE_IN_PLACE, *SIDE_SIZE),
            change_note="the RayService is replaced and the node group resized only when the GPU node count changes",
        ),
        Setting(
            "pipelineParallelSize",
            Integer(1),
            1,
            "vLLM pipeline_parallel_size; only 1 with the NixlConnector KV transfer (see Scaling).",
            feeds="topology.pipeline_parallel_size",
            effects=SERVE_ONLY,
        ),
        Setting(
            "prefillMaxNumSeqs",
            Integer(0, VLLM_DEFAULT),
            32,
            "vLLM max_num_seqs of the prefill side; 0 leaves vLLM's default (256 below 70 GiB of GPU memory, 1024 "
            "above). 32 because with CUDA graphs vLLM needs it at most a hybrid model's state blocks, and the default "
            "model at maxModelLen 4096 on an L4 gets 47 with vLLM's 256 (62 with 32, measured: "
            "lab/records/gpu-end-to-end.md); raise it on larger GPUs.",
            feeds="prefill.max_num_seqs",
            effects=SERVE_ONLY,
        ),
        Setting(
            "decodeMaxNumSeqs",
            Integer(0, VLLM_DEFAULT),
            32,
            "vLLM max_num_seqs of the decode side, the requests it decodes at once; 0 leaves vLLM's default (256 "
            "below 70 GiB of GPU memory, 1024 above). 32 for the same reason as prefillMaxNumSeqs; raise it on larger "
            "GPUs.",
            feeds="decode.max_num_seqs",
            effects=SERVE_ONLY,
        ),
        *per_side(
            "{side}MaxNumBatchedTokens",
            Integer(0, VLLM_DEFAULT),
            0,
            "vLLM max_num_batched_tokens of the {side} side; 0 leaves vLLM's default.",
            feeds="{side}.max_num_batched_tokens",
            effects=SERVE_ONLY,
        ),
        Setting(
            "prefillQuantization",
            Choice(QUANTIZATIONS),
            "none",
            "vLLM quantization of the prefill side's weights: none (the checkpoint's own dtype, or its own "
            "quantization_config) or fp8 (vLLM's online FP8 of the linear layers at load, half their bytes; compute "
            "capability 7.5 or later, weight-only below 8.9). Off by default: no published evaluation covers it for "
            "the default model's Gated DeltaNet layers (see Scaling, FP8).",
            feeds="prefill.quantization",
            effects=SERVE_ONLY,
        ),
        Setting(
            "decodeQuantization",
            Choice(QUANTIZATIONS),
            "none",
            "vLLM quantization of the decode side's weights, as prefillQuantization; decode reads every weight each "
            "step, so it gains most from fp8.",
            feeds="decode.quantization",
            effects=SERVE_ONLY,
        ),
        Setting(
            "kvCacheDtype",
            Choice(KV_CACHE_DTYPES),
            "auto",
            "vLLM kv_cache_dtype of both sides (NIXL refuses a pair that differs): auto (the model dtype) or fp8, "
            "fp8_e4m3, fp8_e5m2 (one byte per element, half the KV bytes per token and per transfer; compute "
            "capability 8.0 or later). A hybrid model's Gated DeltaNet state keeps its dtype. Off by default: at "
            "the default maxModelLen and decodeMaxNumSeqs the KV of FP8 weights alone holds every sequence (see "
            "Scaling, FP8).",
            effects=SERVE_ONLY,
        ),
        Setting(
            "prefixCaching",
            Choice(PREFIX_CACHING_MODES),
            "auto",
            "vLLM prefix caching: a prompt that starts like an earlier one (a chat's history, a shared system prompt) "
            "reuses that prefix's KV cache instead of prefilling it again. on: the prefill side; off: no engine; auto: "
            "on where measured correct and faster (attention-only models), off for hybrid models such as the default "
            "(measured slower at an L4's memory, see Prefix caching). The decode side caches only for attention-only "
            "models, whatever the setting but off.",
            feeds="prefill.prefix_caching, decode.prefix_caching",
            effects=SERVE_ONLY,
            change_note=(
                "the engines of a side whose cache turns on or off restart; on a hybrid model a cached engine holds "
                "two state blocks a request, so fewer requests fit its KV cache (engineCapacity says how many; "
                "measured on an L4's memory: 80 preemptions at 16 concurrent requests, none uncached)"
            ),
        ),
        Setting(
            "prefillKvOffloadGiB",
            Integer(0, " (0: no host tier)"),
            0,
            "GiB of the node's host memory each prefill engine keeps KV blocks in when its GPU evicts them (vLLM's "
            "native CPU offloading beside NIXL): a prompt that starts like an earlier one loads them back instead of "
            "prefilling again. Needs the side's prefix caching on; refused for a hybrid model such as the default "
            "(vLLM 0.26's tier stopped its engine under load, measured). Pinned in the worker pod's memory beside "
            "Ray's object store: the preview refuses what the gpuNodeType cannot hold "
            "(see Prefix caching, Host-memory KV tier).",
            feeds="prefill.kv_offload_gib",
            effects=SERVE_ONLY,
            change_note="the side's engines restart with the new tier, empty: the host-memory cache starts cold",
        ),
        Setting(
            "decodeKvOffloadGiB",
            Integer(0, " (0: no host tier)"),
            0,
            "GiB of host memory each decode engine keeps evicted KV blocks in, as prefillKvOffloadGiB; only where the "
            "decode side caches prefixes (attention-only models, see Prefix caching).",
            feeds="decode.kv_offload_gib",
            effects=SERVE_ONLY,
        ),
        Setting(
            "prefixAwareRouting",
            BOOLEAN,
            False,
            "Route each request to the replica whose earlier prompts share the longest prefix with it (Ray Serve "
            "LLM's PrefixCacheAffinityRouter, run by the stack's fix of it), on each side that caches prefixes and "
            "may have more than one replica; with one replica it changes nothing (the preview says so). It does not "
            "balance load: on two replicas sharing four prefixes it won at most 2.8 points of cache hits and cost 24 % "
            "of the throughput at 64 concurrent requests (measured, see Prefix caching).",
            feeds="prefill.prefix_routing, decode.prefix_routing",
            effects=(SERVE_IN_PLACE, RAYSERVICE_REPLACED),
            change_note="the RayService is replaced when a side starts or stops routing by prefix: the pods mount the "
            "router's code; with no side routing only the serve config could change, and nothing does",
        ),
        Setting(
            "serveAutoscaling",
            BOOLEAN,
            False,
            "Ray Serve autoscales each side between <side>Replicas and <side>MaxReplicas; KubeRay's autoscaler adds "
            "Ray worker pods and the Cluster Autoscaler GPU nodes to match (see Scaling).",
            effects=(MONITORING, SERVE_IN_PLACE, *SIDE_SIZE),
            change_note="the head's PodMonitor and its Prometheus NetworkPolicy add or drop the head autoscaler's "
            "metrics port",
        ),
        *per_side(
            "{side}MaxReplicas",
            Integer(0, AUTOSCALING_ONLY),
            0,
            "Most {side} replicas with serveAutoscaling (at least {side}Replicas); 0 otherwise.",
            feeds="{side}.max_replicas",
            effects=(SERVE_IN_PLACE, *SIDE_SIZE),
        ),
        *per_side(
            "{side}TargetOngoingRequests",
            Integer(0, AUTOSCALING_ONLY),
            0,
            "Ongoing requests per {side} replica that Ray Serve scales toward (required with serveAutoscaling); 0 "
            "otherwise.",
            feeds="{side}.target_ongoing_requests",
            effects=SERVE_ONLY,
        ),
        Setting(
            "prefillTtftObjectiveMs",
            Integer(0, AUTOSCALING_ONLY),
            0,
            "Time to first token, in ms at latencyObjectivePercentile, that the prefill side scales to keep: the "
            "stack's policy adds replicas where the side's latency (measured where its replicas report it, else read "
            "off its ongoing requests through the default model's L4 curve) passes it; 0 scales on "
            "prefillTargetOngoingRequests alone (see Scaling).",
            feeds="prefill.latency_objective_ms",
            effects=(SERVE_IN_PLACE, RAYSERVICE_REPLACED),
            change_note=LATENCY_POLICY_NOTE,
        ),
        Setting(
            "decodeItlObjectiveMs",
            Integer(0, AUTOSCALING_ONLY),
            0,
            "Inter-token latency (time per output token), in ms at latencyObjectivePercentile, that the decode side "
            "scales to keep, as prefillTtftObjectiveMs; 0 scales on decodeTargetOngoingRequests alone.",
            feeds="decode.latency_objective_ms",
            effects=(SERVE_IN_PLACE, RAYSERVICE_REPLACED),
            change_note=LATENCY_POLICY_NOTE,
        ),
        Setting(
            "latencyObjectivePercentile",
            Choice(PERCENTILES),
            "p99",
            "The percentile both latency objectives are at (the recorded sweeps hold p50 and p99).",
            feeds="scaling_pace.percentile",
            effects=SERVE_ONLY,
        ),
        Setting(
            "serveUpscaleDelaySeconds",
            Integer(0, maximum=WARM_ENGINE_START_S),
            30,
            "How long a side must want more replicas before Ray Serve adds them (Serve's default 30 s): short, since "
            f"a replica already takes {WARM_ENGINE_START_S} s to start on a warm node (docs/model-cache.md).",
            feeds="scaling_pace.upscale_delay_s",
            effects=SERVE_ONLY,
        ),
        Setting(
            "serveDownscaleDelaySeconds",
            Integer(WARM_ENGINE_START_S, " (an engine's start on a warm node, measured: docs/model-cache.md)"),
            600,
            "How long a side must want fewer replicas before Ray Serve removes them (Serve's default 600 s): longer "
            f"than the {NEW_NODE_ENGINE_START_S} s a replica on a new GPU node takes to start (docs/model-cache.md), "
            "so a lull shorter than a start keeps the replicas it would have to start again.",
            feeds="scaling_pace.downscale_delay_s",
            effects=SERVE_ONLY,
        ),
        Setting(
            "clusterAutoscalerVersion",
            Text(CHART_VERSION_PATTERN, "a version such as 1.4.0"),
            "9.59.0",
            "Version of the cluster-autoscaler Helm chart (Cluster Autoscaler 1.35, built for kubernetesVersion 1.35 "
            "only), installed only with serveAutoscaling.",
            effects=(CHART_ROLLED,),
        ),
        Setting(
            "kvBufferDevice",
            Choice(("auto", "cuda", "cpu")),
            "auto",
            "Where vLLM's NIXL connector registers the KV cache for transfer: cuda (GPU memory over EFA RDMA), cpu "
            "(staged in host memory; vLLM 0.26 cannot do this for hybrid models such as the default) or auto (cuda "
            "where the instance type's EFA supports RDMA read, else cpu).",
            effects=SERVE_ONLY,
        ),
        Setting(
            "hfToken",
            SECRET,
            "",
            "Optional Hugging Face token for gated models; set it with `pulumi config set --secret hfToken`.",
            feeds="hf_token, hf_token_value",
            effects=(SECRET_UPDATED, MODEL_MIRRORED, RAYSERVICE_REPLACED),
            change_note="a new value updates its Secret only (with the model cache the mirror's, else the workers'); "
            "adding or removing the token replaces the mirror Job with the model cache, else the RayService",
        ),
        Setting(
            "serveExposure",
            Choice(("none", "internal", "internet-facing")),
            "none",
            "Extra LoadBalancer (NLB) in front of the serve pods: none, internal or internet-facing.",
            effects=(LOAD_BALANCER, SERVE_IN_PLACE, RAYSERVICE_REPLACED),
            change_note=(
                "the RayService is replaced only when API keys come or go with the exposure (to or from none, with "
                "serveApiKeyAuth true): its pods mount the keys; between internal and internet-facing only the load "
                "balancer changes"
            ),
        ),
        Setting(
            "serveSourceCidrs",
            StringList(client_cidr, CLIENT_CIDR_LIST),
            [],
            "CIDRs allowed through the serve load balancer, and to its NodePort on the nodes (required whenever "
            "serveExposure is not none, and then not the whole internet).",
            effects=(LOAD_BALANCER,),
        ),
        Setting(
            "serveApiKeys",
            SECRET,
            "",
            "API keys the serve endpoint accepts as `Authorization: Bearer <key>`, a JSON list set as one secret "
            "(`pulumi config set --secret serveApiKeys '[\"<key>\"]'`, each key 32-256 printable characters); two at "
            "once let a key be rotated without downtime. Required when serveExposure is not none and serveApiKeyAuth "
            "is true.",
            effects=(KEYS_RELOADED,),
            change_note="only while the endpoint asks for keys (serveExposure not none, serveApiKeyAuth true)",
        ),
        Setting(
            "serveApiKeyAuth",
            BOOLEAN,
            True,
            "Ask every request for one of serveApiKeys whenever serveExposure is not none (a 401 otherwise; health "
            "checks stay open). false is refused for internet-facing.",
            effects=(SERVE_IN_PLACE, RAYSERVICE_REPLACED),
            change_note="only with serveExposure internal or internet-facing; with none nothing changes",
        ),
        Setting(
            "serveMaxRequestMib",
            Integer(1, maximum=1024),
            16,
            "Largest request body the serve endpoint's edge takes, in MiB, 1 to 1024: a larger Content-Length gets 413 "
            "before the body is read, and a chunked body 411 (docs/security.md, The edge). Raise it for prompts that "
            "carry images.",
            effects=(RAYSERVICE_REPLACED,),
            change_note="the edge's configuration is a volume of the worker pods: they start again with it",
        ),
        Setting(
            "serveCertificateArn",
            Text(
                CERTIFICATE_ARN_PATTERN,
                "an ACM certificate ARN such as arn:aws:acm:<region>:<account>:certificate/<uuid>",
                optional=True,
            ),
            "",
            "ACM certificate (in the stack's region) for the DNS name clients use; the serve load balancer listens "
            "for HTTPS only, on 443. Required when serveExposure is not none.",
            effects=(LOAD_BALANCER,),
        ),
        Setting(
            "serveReadyTimeoutMinutes",
            Integer(
                5,
                f" (an assumed IAM role's credentials last at most {MAX_SERVE_READY_MINUTES // 60} h)",
                maximum=MAX_SERVE_READY_MINUTES,
            ),
            45,
            "How long `pulumi up` waits for the RayService to run the config just applied (image pull + model load), "
            "5 to 720; past it `pulumi up` fails naming what is missing. The app's alerts wait as long on a first "
            "deploy (see Observability).",
            effects=(NOTHING_RUNNING, MONITORING),
            change_note="the alert rules take the new deadline (with observability)",
        ),
        Setting(
            "modelPreflight",
            BOOLEAN,
            True,
            "Before the RayService changes, check that modelSource exists, is readable with the stack's credentials "
            "(hfToken, or the deploying identity for s3://) and holds a config.json vLLM can load; needs HTTPS to "
            "huggingface.co or S3 from the deploying machine.",
            effects=(NOTHING_RUNNING,),
        ),
        Setting(
            "modelCache",
            BOOLEAN,
            True,
            "Mirror a Hugging Face modelSource once into the stack's own S3 bucket (an in-cluster Job on the first "
            "`pulumi up` and when modelSource changes) and load the GPU workers from it instead of the Hub; an s3:// "
            "modelSource is read directly either way (docs/model-cache.md).",
            effects=(MODEL_MIRRORED, MONITORING, SERVE_IN_PLACE, RAYSERVICE_REPLACED),
            change_note="only for a Hugging Face modelSource; the RayService is replaced because the workers' service "
            "account (read access to the cache) comes or goes; the alerts' first-deploy deadline gains or loses the "
            "mirror's timeout",
        ),
        Setting(
            "modelCacheRetainOnDestroy",
            BOOLEAN,
            False,
            "Keep the model cache bucket and its weights in the account on `pulumi destroy` (it leaves the stack's "
            "state; delete it yourself later); false, the default, deletes the bucket with the weights in it.",
            effects=(AWS_IN_PLACE,),
        ),
    ),
}
