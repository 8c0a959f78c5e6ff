"""What changing a setting does to a running stack: the change model, one source for the README and the preview.

Each setting maps to the effects a change to it has, mildest first. The rules behind each effect:
- SERVE_IN_PLACE: only `serveConfigV2` changes. KubeRay 1.4.0 sends the whole config to Ray's dashboard
  (`PUT /api/serve/applications/`); Serve restarts the engines of the deployments that changed. With one
  replica a side it stops the old replica before the new one starts: requests failed for 106 s of a 127 s
  update, and a broken config stays DEPLOY_FAILED with nothing serving (../shared/notes/serve-updates.md).
- RAYSERVICE_REPLACED: `rayClusterConfig` changes. KubeRay 1.4.0 would build a second RayCluster beside the
  first, which the GPU node group cannot hold, and ignores replica changes on a running cluster
  (../shared/notes/kuberay-1.4-updates-and-waits.md); so the RayService is deleted and created again
  (`replaceOnChanges` + `deleteBeforeReplace`): every engine restarts, a cold start with the model load.
- GPU_NODES_ROLLED / SYSTEM_NODES_ROLLED: a launch template, AMI or Kubernetes version change makes EKS
  replace the nodes (managed-node-update-behavior); the GPU group updates with `MINIMAL` (old node first,
  no surge), so the pods on it restart; a system node carries the Ray head, whose restart restarts the app.
- Node group replacements, cluster and network replacements: a new resource of a fixed name, created after
  the old one is deleted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Effect:
    name: str  # a short id, also the group name `pulumi preview --diff` shows
    what: str  # what happens to the running stack
    serving: str  # what clients see while it happens


NOTHING_RUNNING = Effect(
    "checks-only", "only what `pulumi up` checks or waits for changes; nothing running is touched", "no change"
)
AWS_IN_PLACE = Effect("aws-in-place", "the AWS resource is updated in place; no pod restarts", "no change")
LOAD_BALANCER = Effect(
    "load-balancer",
    "the serve load balancer Service is created, updated or deleted; the in-cluster Service is untouched",
    "the NLB's clients lose it while it is replaced or removed",
)
ADDON_ROLLED = Effect(
    "addon-rolled",
    "the EKS add-on is updated in place; EKS rolls its pods (DNS, CNI, kube-proxy)",
    "no change expected",
)
CHART_ROLLED = Effect(
    "chart-rolled",
    "helm upgrades the chart in place; its DaemonSet or Deployment rolls",
    "no change expected: running pods keep their GPUs and EFA devices",
)
MONITORING = Effect(
    "monitoring",
    "the metrics stack changes (infra/observability.py): helm installs, upgrades or removes its charts, the "
    "PodMonitors, alert rules and dashboards are updated in place; the serving objects are untouched",
    "no change; Prometheus and Grafana restart while their chart upgrades",
)
SYSTEM_NODES_SCALED = Effect("system-nodes-scaled", "the system node group's size changes in place", "no change")
GPU_NODES_SCALED = Effect(
    "gpu-nodes-scaled", "the GPU node group's size changes in place (nodes added, or removed)", "see the RayService"
)
SERVE_IN_PLACE = Effect(
    "serve-in-place",
    "KubeRay sends the new serve config to the running cluster; Serve restarts the engines of the changed deployments",
    "about 2 minutes without answers with one replica a side (measured 106 and 125 s); with more replicas not "
    "measured; a broken config leaves the app DEPLOY_FAILED and `pulumi up` fails: roll back",
)
MODEL_MIRRORED = Effect(
    "model-mirrored",
    "the model cache changes (infra/model_cache.py): a new mirror Job copies the model into the stack's bucket "
    "(files already there are skipped) and `pulumi up` waits for it before the RayService changes; the cache's "
    "IAM policies and the mirror's Secret are updated in place",
    "no change while the mirror runs; then as the serve config changes",
)
SECRET_UPDATED = Effect(
    "secret-updated",
    "the Kubernetes Secret is updated in place; pods read it when they start, so it is used from the next restart",
    "no change",
)
KEYS_RELOADED = Effect(
    "keys-reloaded",
    "the API keys Secret is updated in place; the pods see it as a mounted file, which the kubelet refreshes "
    "(about a minute) and the ingress re-reads every 10 s: no restart",
    "a new key works, and a removed key is refused, about a minute after `pulumi up`",
)
RAYSERVICE_REPLACED = Effect(
    "rayservice-replaced",
    "the RayService is deleted and created again (KubeRay would otherwise build a second cluster the GPU nodes "
    "cannot hold, or ignore the change)",
    "no answers until the new cluster has pulled the image and loaded the model (minutes)",
)
GPU_NODES_ROLLED = Effect(
    "gpu-nodes-rolled",
    "EKS replaces each GPU node (update strategy MINIMAL: the old node goes first, no extra instance)",
    "no answers from the side whose node is being replaced, then the engines start again",
)
SYSTEM_NODES_ROLLED = Effect(
    "system-nodes-rolled",
    "EKS replaces the system nodes (new node first); the KubeRay operator and the Ray head move",
    "no answers from the head's restart until the app has started again",
)
GPU_NODES_REPLACED = Effect(
    "gpu-nodes-replaced",
    "the GPU node group is deleted and created again (its instance type, AZ, name or capacity are fixed at creation)",
    "no answers until the new nodes have joined and the engines started",
)
SYSTEM_NODES_REPLACED = Effect(
    "system-nodes-replaced",
    "the system node group is deleted and created again; the operator and the Ray head restart",
    "no answers until the app has started again",
)
CONTROL_PLANE_UPGRADED = Effect(
    "control-plane-upgraded",
    "EKS upgrades the control plane one minor at a time, then both node groups roll",
    "as the node groups roll",
)
STACK_REBUILT = Effect(
    "stack-rebuilt",
    "the EKS cluster (or the VPC under it) is replaced, and everything in it with it; with protectResources "
    "Pulumi refuses",
    "down until the whole stack is up again",
)

_SERVE_ONLY = (SERVE_IN_PLACE,)
_SIDE_SIZE = (GPU_NODES_SCALED, RAYSERVICE_REPLACED)

# Every setting Pulumi.yaml declares, and the AWS provider's region. A test runs the program with each
# setting changed and holds the effects here to what the change does to the declared resources.
CHANGE_EFFECTS: Mapping[str, tuple[Effect, ...]] = {
    "aws:region": (STACK_REBUILT,),
    "vpcCidr": (STACK_REBUILT,),
    "maxAzs": (STACK_REBUILT,),
    "natGatewayPerAz": (AWS_IN_PLACE,),
    "clusterName": (STACK_REBUILT,),
    "kubernetesVersion": (CONTROL_PLANE_UPGRADED, SYSTEM_NODES_ROLLED, GPU_NODES_ROLLED),
    "apiPublicAccessCidrs": (AWS_IN_PLACE,),
    "adminPrincipalArns": (AWS_IN_PLACE,),
    "controlPlaneLogging": (AWS_IN_PLACE,),
    "secretsEncryption": (STACK_REBUILT,),
    "vpcCniVersion": (ADDON_ROLLED,),
    "corednsVersion": (ADDON_ROLLED,),
    "kubeProxyVersion": (ADDON_ROLLED,),
    "systemNodeType": (SYSTEM_NODES_REPLACED,),
    "systemNodeCount": (SYSTEM_NODES_SCALED,),
    "gpuNodeType": (GPU_NODES_REPLACED, RAYSERVICE_REPLACED),
    "gpuNodeCount": (NOTHING_RUNNING,),
    "gpuNodegroupName": (GPU_NODES_REPLACED,),
    "gpuAz": (GPU_NODES_REPLACED,),
    "gpuRootVolumeGiB": (GPU_NODES_ROLLED,),
    "capacityReservationId": (GPU_NODES_REPLACED,),
    "gpuCapacityType": (GPU_NODES_REPLACED,),
    "quotaPreflight": (NOTHING_RUNNING,),
    "nvidiaDevicePluginVersion": (CHART_ROLLED,),
    "efaDevicePluginVersion": (CHART_ROLLED,),
    "dlcImage": (MODEL_MIRRORED, RAYSERVICE_REPLACED),
    "kuberayVersion": (CHART_ROLLED,),
    "allowUnvalidatedKuberayVersion": (NOTHING_RUNNING,),
    "rayVersion": (RAYSERVICE_REPLACED,),
    "rayServiceName": (RAYSERVICE_REPLACED, LOAD_BALANCER, MONITORING),
    "namespace": (RAYSERVICE_REPLACED, LOAD_BALANCER, MONITORING),
    "modelId": _SERVE_ONLY,
    "modelSource": (MODEL_MIRRORED, SERVE_IN_PLACE),
    "maxModelLen": _SERVE_ONLY,
    "languageModelOnly": _SERVE_ONLY,
    "prefillReplicas": (SERVE_IN_PLACE, *_SIDE_SIZE),
    "decodeReplicas": (SERVE_IN_PLACE, *_SIDE_SIZE),
    "tensorParallelSize": (SERVE_IN_PLACE, *_SIDE_SIZE),
    "pipelineParallelSize": _SERVE_ONLY,
    "prefillMaxNumSeqs": _SERVE_ONLY,
    "decodeMaxNumSeqs": _SERVE_ONLY,
    "prefillMaxNumBatchedTokens": _SERVE_ONLY,
    "decodeMaxNumBatchedTokens": _SERVE_ONLY,
    "prefillQuantization": _SERVE_ONLY,
    "decodeQuantization": _SERVE_ONLY,
    "kvCacheDtype": _SERVE_ONLY,
    "serveAutoscaling": (SERVE_IN_PLACE, *_SIDE_SIZE),
    "prefillMaxReplicas": (SERVE_IN_PLACE, *_SIDE_SIZE),
    "decodeMaxReplicas": (SERVE_IN_PLACE, *_SIDE_SIZE),
    "prefillTargetOngoingRequests": _SERVE_ONLY,
    "decodeTargetOngoingRequests": _SERVE_ONLY,
    "clusterAutoscalerVersion": (CHART_ROLLED,),
    "kvBufferDevice": _SERVE_ONLY,
    "hfToken": (SECRET_UPDATED, MODEL_MIRRORED, RAYSERVICE_REPLACED),
    "serveExposure": (LOAD_BALANCER, SERVE_IN_PLACE, RAYSERVICE_REPLACED),
    "serveSourceCidrs": (LOAD_BALANCER,),
    "serveApiKeys": (KEYS_RELOADED,),
    "serveApiKeyAuth": (SERVE_IN_PLACE, RAYSERVICE_REPLACED),
    "serveCertificateArn": (LOAD_BALANCER,),
    "serveReadyTimeoutMinutes": (NOTHING_RUNNING,),
    "modelPreflight": (NOTHING_RUNNING,),
    "modelCache": (MODEL_MIRRORED, SERVE_IN_PLACE, RAYSERVICE_REPLACED),
    "modelCacheForceDestroy": (AWS_IN_PLACE,),
    "observability": (MONITORING,),
    "kubePrometheusStackVersion": (MONITORING,),
    "dcgmExporterVersion": (MONITORING,),
    "ttftP99ObjectiveMs": (MONITORING,),
    "ampWorkspaceUrl": (MONITORING,),
    "owner": (AWS_IN_PLACE, SYSTEM_NODES_ROLLED, GPU_NODES_ROLLED),
    "costCenter": (AWS_IN_PLACE, SYSTEM_NODES_ROLLED, GPU_NODES_ROLLED),
    "protectResources": (AWS_IN_PLACE,),
}

# Notes the table cannot say in an effect: when an effect applies only to some changes of the setting.
CHANGE_NOTES: Mapping[str, str] = {
    "tensorParallelSize": "the RayService is replaced and the node group resized only when the GPU node count changes",
    "hfToken": "a new value updates the Secrets only (the workers' and, with the model cache, the mirror's); adding or "
    "removing the token replaces the RayService and the mirror Job",
    "serveExposure": "the RayService is replaced only when API keys come or go with the exposure (to or from none, "
    "with serveApiKeyAuth true): its pods mount the keys; between internal and internet-facing only the load "
    "balancer changes",
    "serveApiKeyAuth": "only with serveExposure internal or internet-facing; with none nothing changes",
    "serveApiKeys": "only while the endpoint asks for keys (serveExposure not none, serveApiKeyAuth true)",
    "owner": "tags reach the node launch templates, so both node groups roll",
    "costCenter": "tags reach the node launch templates, so both node groups roll",
    "kubernetesVersion": "EKS upgrades one minor version at a time; a downgrade is refused by EKS",
    "secretsEncryption": "EKS can add envelope encryption to a cluster but never remove it",
    "modelId": "Ray Serve LLM names each engine deployment after the model id, so a new id replaces the deployment "
    "whatever the replica count: no rolling update",
    "modelSource": "with modelCache on, a Hugging Face repo is mirrored into the cache first; an s3:// source is "
    "read as it is",
    "dlcImage": "the mirror Job runs in the same image, so it runs again; with the files already in the bucket it "
    "only checks them",
    "modelCache": "only for a Hugging Face modelSource; the RayService is replaced because the workers' service "
    "account (read access to the cache) comes or goes",
    "maxAzs": "adds or removes subnets under the cluster; whether EKS takes the new subnets in place was not checked, "
    "so plan it as a rebuild",
}


ALL_EFFECTS = (
    NOTHING_RUNNING,
    AWS_IN_PLACE,
    MODEL_MIRRORED,
    SECRET_UPDATED,
    KEYS_RELOADED,
    LOAD_BALANCER,
    ADDON_ROLLED,
    CHART_ROLLED,
    MONITORING,
    SYSTEM_NODES_SCALED,
    GPU_NODES_SCALED,
    SERVE_IN_PLACE,
    RAYSERVICE_REPLACED,
    GPU_NODES_ROLLED,
    SYSTEM_NODES_ROLLED,
    GPU_NODES_REPLACED,
    SYSTEM_NODES_REPLACED,
    CONTROL_PLANE_UPGRADED,
    STACK_REBUILT,
)


def most_severe(key: str) -> Effect:
    return max(CHANGE_EFFECTS[key], key=ALL_EFFECTS.index)


def settings_by_effect(settings: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """The settings grouped under the most severe effect a change to each has, mildest group first: the
    ServeRollout's input, so that `pulumi preview --diff` names each changed setting under what it costs."""
    grouped: dict[str, dict[str, str]] = {}
    for effect in ALL_EFFECTS:
        members = {key: value for key, value in sorted(settings.items()) if most_severe(key) is effect}
        if members:
            grouped[effect.name] = members
    return grouped
