"""What changing a setting does to a running stack: the change model, one source for docs/changes.md and the preview.

Each row of the settings table (`infra/settings/table.py`) names the effects a change to its key has, mildest first;
each effect says whether the app keeps serving through it (`keeps_serving`) and what a failure leaves
(`if_it_fails`). The KubeRay, Ray and EKS behaviour behind each effect, with its sources:
docs/changes.md#changing-a-running-stack and
docs/changes.md#keeping-serving-through-a-cluster-shape-change-newcluster."""

from __future__ import annotations

from dataclasses import dataclass

# What one GPU node of a newCluster surge runs beside the active cluster, in minutes, from its launch until the
# Cluster Autoscaler removes the old cluster's node: modelled (estimates and measurements), docs/model-cache.md
# "What a new node waits for"; the lab's test holds the model to it (lab/tests/test_cold_start.py). Of it, the old
# cluster's deletion delay at the default maxModelLen, which a stack's preview replaces with its own
# (infra/preview_notes.py surge_minutes).
SURGE_MINUTES_PER_GPU_NODE = 23
SURGE_DELETION_DELAY_S = 246


@dataclass(frozen=True)
class Effect:
    name: str  # a short id, also the group name `pulumi preview --diff` shows
    what: str  # what happens to the running stack
    serving: str  # what clients see while it happens
    # Whether the app keeps answering through the change with the replicas (and GPU nodes) the stack has: "yes", or
    # "no: " and why not.
    keeps_serving: str
    # What a failed change leaves running, and how it is rolled back (set the previous values, `pulumi up`).
    if_it_fails: str


NOTHING_RUNNING = Effect(
    "checks-only",
    "only what `pulumi up` checks or waits for changes; nothing running is touched",
    "no change",
    keeps_serving="yes",
    if_it_fails="nothing running changed; set a valid value and run `pulumi up` again",
)
AWS_IN_PLACE = Effect(
    "aws-in-place",
    "the AWS resource is updated in place; no pod restarts",
    "no change",
    keeps_serving="yes",
    if_it_fails="AWS refuses the update and the resource stays as it was; set the previous value, `pulumi up`",
)
LOAD_BALANCER = Effect(
    "load-balancer",
    "the serve load balancer Service is created, updated or deleted; the in-cluster Service is untouched",
    "the NLB's clients lose it while it is replaced or removed",
    keeps_serving="yes inside the cluster; no for the NLB's clients while it is replaced or removed",
    if_it_fails="the in-cluster Service keeps serving; set the previous values, `pulumi up` makes the NLB again",
)
ADDON_ROLLED = Effect(
    "addon-rolled",
    "the EKS add-on is updated in place; EKS rolls its pods (DNS, CNI, kube-proxy)",
    "no change expected",
    keeps_serving="yes",
    if_it_fails="EKS reports the failed add-on update; set the previous version, `pulumi up`",
)
CHART_ROLLED = Effect(
    "chart-rolled",
    "helm upgrades the chart in place; its DaemonSet or Deployment rolls",
    "no change expected: running pods keep their GPUs and EFA devices",
    keeps_serving="yes",
    if_it_fails=(
        "the helm release fails and its pods keep running; set the previous version, `pulumi up` (an upgrade in place)"
    ),
)
MONITORING = Effect(
    "monitoring",
    "the metrics stack changes (infra/observability/monitoring.py): helm installs, upgrades or removes its charts, the "
    "PodMonitors, alert rules and dashboards are updated in place; the serving objects are untouched",
    "no change; Prometheus and Grafana restart while their chart upgrades",
    keeps_serving="yes",
    if_it_fails="serving is untouched; set the previous values, `pulumi up`",
)
SYSTEM_NODES_SCALED = Effect(
    "system-nodes-scaled",
    "the system node group's size changes in place",
    "no change",
    keeps_serving="yes",
    if_it_fails="EKS keeps the old size; set the previous value, `pulumi up`",
)
GPU_NODES_SCALED = Effect(
    "gpu-nodes-scaled",
    "the GPU node group's size changes in place (nodes added, or removed)",
    "see the RayService",
    keeps_serving=(
        "no: these settings also replace the RayService (`rayservice-replaced`); yes with clusterUpgradeStrategy "
        "newCluster, as `rayservice-new-cluster`"
    ),
    if_it_fails=(
        "nodes that do not come (quota, capacity) leave pods unscheduled, named when `pulumi up` fails at its "
        "deadline; roll back as for `rayservice-replaced`"
    ),
)
SERVE_IN_PLACE = Effect(
    "serve-in-place",
    "KubeRay sends the new serve config to the running cluster; Serve restarts the engines of the changed deployments",
    "about 2 minutes without answers with one replica a side (measured 106 and 125 s); with two or more a side none "
    "lost (measured: 0 of 288 requests failed on the GPU host, 0 of 244 on CPU), the rollout taking one engine start "
    "per replica in a row; a broken config leaves the app DEPLOY_FAILED and `pulumi up` fails: roll back",
    keeps_serving=(
        "yes with two or more replicas a side: Serve stops one old replica as it starts a new one and the next only "
        "once that one runs, the ingress too (two replicas of it, which the stack then sets; measured); no with one "
        "replica a side: Serve stops the old replica before the new one starts (measured)"
    ),
    if_it_fails=(
        "the old version answers while Serve retries the new replicas (measured: 175 s; the 11 of 360 requests that "
        "failed match the 5.4 s outage that began about then, one request every 0.5 s), then the app is "
        "DEPLOY_FAILED and nothing serves, at any replica count: Serve 2.58 marks the deployment unavailable "
        "although old replicas run (measured). The rollout then does the roll back in place itself: it writes the "
        "last config that ran back into the RayService (KubeRay sends it to the running cluster), waits for it and "
        "fails `pulumi up` naming the cause. The outage is one engine start: with two or more replicas a side the "
        "surviving old replicas answer again once the rollback is built (13 s after it reached Serve, measured) plus "
        "the rollout's poll (10 s) and KubeRay's reconcile; with one replica a side the old engine starts again (62 "
        "s on the node's caches, 189 s cold: docs/cold-start.md). Then fix the config (or set the previous values) "
        "and `pulumi up`; an unchanged `pulumi up` fails at once naming the rolled-back config, `pulumi up "
        "--refresh` tries it again"
    ),
)
# With clusterUpgradeStrategy newCluster the serve settings take the surge path too: every one of them changes the
# app's code version (infra/serving/serve_config.py engine_restart_digest), which the head template's digest carries.
SERVE_NEW_CLUSTER = Effect(
    "serve-new-cluster",
    "the engines' config changes (clusterUpgradeStrategy newCluster): its digest on the cluster spec makes KubeRay "
    "build a second RayCluster for it beside the active one, as for a cluster-shape change (`rayservice-new-cluster`), "
    "and switch `<name>-serve-svc` to it once every application runs there",
    "the old cluster answers until the switch, the new one after it: no gap expected (not measured on EKS); the "
    "change takes a new cluster's start (GPU nodes, image pull, model load) instead of a rolling engine restart",
    keeps_serving=(
        "yes with the extra capacity, at any replica count: a second Ray head and as many GPU nodes again as the "
        f"cluster runs, each about {SURGE_MINUTES_PER_GPU_NODE} minutes (modelled, docs/changes.md): extra GPU "
        f"node-hours about GPU nodes x {SURGE_MINUTES_PER_GPU_NODE}/60"
    ),
    if_it_fails=(
        "the active cluster keeps serving the previous version, untouched: no request fails; the failed cluster stays "
        "pending on its GPU nodes and `pulumi up` fails on its DEPLOY_FAILED. Fixing the config (or setting the "
        "previous values), `pulumi up` builds another cluster beside the active one, another surge, and KubeRay "
        "deletes the failed one after its deletion delay (KubeRay 1.7.0: the longest stream the config allows, at "
        "least 60 s; 1.4.0: 60 s)"
    ),
)
GCS_STORE = Effect(
    "gcs-store",
    "the Ray head's GCS store changes (infra/serving/gcs_store.py): ElastiCache creates, modifies in place or deletes "
    "the Valkey group; a modification switches its primary at the end, which the GCS meets by restarting the head",
    "no gap expected: the GPU workers serve through the head's restart (measured on CPU, docs/head-fault-tolerance.md)",
    keeps_serving="yes: the workers ride through one head restart with the store",
    if_it_fails="ElastiCache refuses or stops the change and the group keeps its old shape; set the previous value, "
    "`pulumi up`",
)
MODEL_MIRRORED = Effect(
    "model-mirrored",
    "the model cache changes (infra/serving/model_cache.py): a new mirror Job copies the model into the stack's bucket "
    "(files already there are skipped) and `pulumi up` waits for it before the RayService changes; the cache's "
    "IAM policies and the mirror's Secret are updated in place",
    "no change while the mirror runs; then as the serve config changes",
    keeps_serving="yes while the mirror runs; then as the serve config changes",
    if_it_fails=(
        "a failed mirror fails `pulumi up` before the RayService changes, so the previous config keeps serving; set "
        "the previous values, `pulumi up`"
    ),
)
SECRET_UPDATED = Effect(
    "secret-updated",
    "the Kubernetes Secret is updated in place; pods read it when they start, so it is used from the next restart",
    "no change",
    keeps_serving="yes",
    if_it_fails="running pods keep the value they started with; set the previous value, `pulumi up`",
)
KEYS_RELOADED = Effect(
    "keys-reloaded",
    "the API keys Secret is updated in place; the pods see it as a mounted file, which the kubelet refreshes "
    "(about a minute) and the ingress re-reads every 10 s: no restart",
    "a new key works, and a removed key is refused, about a minute after `pulumi up`",
    keeps_serving="yes",
    if_it_fails="the previous keys keep working until the new file is read; set the previous keys, `pulumi up`",
)
RAYSERVICE_REPLACED = Effect(
    "rayservice-replaced",
    "the RayService is deleted and created again (KubeRay would otherwise build a second cluster the GPU nodes "
    "cannot hold, or ignore the change)",
    "no answers until the new cluster has pulled the image and loaded the model (minutes)",
    keeps_serving=(
        "no: a full outage, since the old RayService, its cluster and pods are deleted before the new one is created "
        "(`deleteBeforeReplace`: the GPU nodes hold one cluster)"
    ),
    if_it_fails=(
        "nothing serves: the old cluster is gone; rolling back (set the previous values, `pulumi up`) replaces the "
        "RayService again, another delete and a cold start of the previous config (image pull and model load, "
        "minutes), which `pulumi up` waits for"
    ),
)
RAYSERVICE_NEW_CLUSTER = Effect(
    "rayservice-new-cluster",
    "the RayService is updated in place (clusterUpgradeStrategy newCluster): KubeRay builds a second RayCluster from "
    "the new spec beside the active one (its head on the system nodes, its GPU workers on nodes the Cluster "
    "Autoscaler adds), sends it the serve config, points `<name>-serve-svc` at it once every application runs "
    "there, and deletes the old cluster after its deletion delay (KubeRay 1.7.0: the longest stream the config "
    "allows, at least 60 s; 1.4.0: 60 s); the stack's NLB follows after `pulumi up`'s wait",
    "the old cluster answers until the switch, the new one after it: no gap expected (not measured on EKS)",
    keeps_serving=(
        "yes with the extra capacity: a second Ray head on the system nodes and as many GPU nodes again as the new "
        f"cluster starts with, each about {SURGE_MINUTES_PER_GPU_NODE} minutes (modelled: node start, image pull, "
        "model load, KubeRay's deletion delay, the Cluster Autoscaler's 10 minutes before it removes an unneeded "
        "node; "
        "docs/changes.md): extra GPU node-hours about GPU nodes x "
        f"{SURGE_MINUTES_PER_GPU_NODE}/60"
    ),
    if_it_fails=(
        "the active cluster keeps serving the previous version; the new one stays pending on its GPU nodes "
        "(`pulumi up` fails on its DEPLOY_FAILED). Rolling back (set the previous values, `pulumi up`) builds yet "
        "another cluster of the previous spec beside the active one, another surge (KubeRay compares the RayService "
        "with the pending cluster, not the active), and deletes the failed one after its deletion delay (at least "
        "60 s); a serve-config fix instead reaches the pending cluster, not the active"
    ),
)
GPU_NODES_ROLLED = Effect(
    "gpu-nodes-rolled",
    "EKS replaces each GPU node (update strategy MINIMAL: the old node goes first, no extra instance)",
    "no answers from the side whose node is being replaced, then the engines start again",
    keeps_serving="no: the side on the node being replaced stops (MINIMAL: no spare node)",
    if_it_fails=(
        "EKS stops the update with the nodes it has not reached on the old version; set the previous value, `pulumi "
        "up` rolls the nodes again"
    ),
)
SYSTEM_NODES_ROLLED = Effect(
    "system-nodes-rolled",
    "EKS replaces the system nodes (new node first); the KubeRay operator and the Ray head move",
    "with headFaultTolerance redis no gap expected: the GPU workers serve through the head's move; without it no "
    "answers from the head's restart until every engine has loaded the model again",
    keeps_serving=(
        "yes with headFaultTolerance redis (the GPU workers keep serving while the head moves, within their 600 s "
        "reconnect timeout; measured on CPU, not on EKS: docs/head-fault-tolerance.md); no without it: the Ray head "
        "restarts, and every GPU worker with it"
    ),
    if_it_fails="EKS stops the update; set the previous value, `pulumi up` rolls the nodes again, another head restart",
)
GPU_NODES_REPLACED = Effect(
    "gpu-nodes-replaced",
    "the GPU node group is deleted and created again (its instance type, AZ, name or capacity are fixed at creation)",
    "no answers until the new nodes have joined and the engines started",
    keeps_serving="no: a full outage until the new nodes have joined and the engines started",
    if_it_fails="nothing serves; rolling back replaces the node group again, new nodes and a cold start",
)
SYSTEM_NODES_REPLACED = Effect(
    "system-nodes-replaced",
    "the system node group is deleted and created again; the operator and the Ray head restart",
    "no answers until the app has started again",
    keeps_serving="no: the operator and the Ray head restart, and with them the app",
    if_it_fails="the app is down until a system node runs the head; rolling back replaces the group again",
)
CONTROL_PLANE_UPGRADED = Effect(
    "control-plane-upgraded",
    "EKS upgrades the control plane one minor at a time, then both node groups roll",
    "as the node groups roll",
    keeps_serving="no: as the node groups roll",
    if_it_fails="EKS cannot downgrade a control plane: fix forward, then `pulumi up`",
)
STACK_REBUILT = Effect(
    "stack-rebuilt",
    "the EKS cluster (or the VPC under it) is replaced, and everything in it with it; with protectResources "
    "Pulumi refuses",
    "down until the whole stack is up again",
    keeps_serving="no: down until the whole stack is up again",
    if_it_fails="rolling back rebuilds the stack again (with protectResources Pulumi refuses both)",
)

ALL_EFFECTS = (
    NOTHING_RUNNING,
    AWS_IN_PLACE,
    GCS_STORE,
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
    SERVE_NEW_CLUSTER,
    RAYSERVICE_NEW_CLUSTER,
    RAYSERVICE_REPLACED,
    GPU_NODES_ROLLED,
    SYSTEM_NODES_ROLLED,
    GPU_NODES_REPLACED,
    SYSTEM_NODES_REPLACED,
    CONTROL_PLANE_UPGRADED,
    STACK_REBUILT,
)
