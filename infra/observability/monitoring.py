"""Metrics, dashboards and alerts: kube-prometheus-stack on the system nodes, NVIDIA's DCGM exporter on the GPU nodes,
PodMonitors for Ray and the KubeRay operator, Ray's and our Grafana dashboards, the alert rules
(docs/observability.md#observability)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from infra.cluster.eks import Cluster
from infra.cluster.helm import Chart, pinned_release, pod_security_patch
from infra.cluster.irsa import service_account_role
from infra.components import Children, declare_manifest, network_policy_role
from infra.kube.namespaces import MONITORING_NAMESPACE as NAMESPACE
from infra.kube.pod_labels import (
    KUBERAY_OPERATOR_SELECTOR,
    RAY_METRICS_PORT,
    RAY_NODE_TYPE_LABEL,
    head_metrics_ports,
)
from infra.kube.pod_resources import (
    ALERTMANAGER_RESOURCES,
    GRAFANA_RESOURCES,
    KUBE_STATE_METRICS_RESOURCES,
    PROMETHEUS_OPERATOR_RESOURCES,
    PROMETHEUS_RESOURCES,
)
from infra.kube.pod_security import MONITORING_LEVEL
from infra.kube.scheduling import SYSTEM_NODE_SELECTOR, gpu_node_scheduling
from infra.observability.alerts import GROUP, GROUP_LABEL, AlertArgs, prometheus_rule
from infra.observability.dashboards import dashboard_config_maps
from infra.observability.network_policy import monitoring_network_policies
from infra.observability.receivers import SECRET_NAME, Receivers, alertmanager_values, sns_publish_policy

PROMETHEUS_COMMUNITY_REPO = "https://prometheus-community.github.io/helm-charts"
# NVIDIA's published chart repository (NVIDIA/dcgm-exporter README.md, "Quickstart on Kubernetes").
DCGM_REPO = "https://nvidia.github.io/dcgm-exporter/helm-charts"
STACK_RELEASE = "kube-prometheus-stack"
RELEASE_LABEL = {"release": STACK_RELEASE}
# The Grafana subchart's Service: `<release>-grafana`, port 80 (grafana-community/helm-charts charts/grafana
# templates/service.yaml, values.yaml service.port); its admin password is generated into the Secret of the
# same name (templates/_helpers.tpl `randAlphaNum 40`) since the values set none.
GRAFANA_SERVICE = f"{STACK_RELEASE}-grafana"
PROMETHEUS_SERVICE = f"{STACK_RELEASE}-prometheus"
PROMETHEUS_PORT = 9090  # values.yaml prometheus.service.port
# Prometheus' service account: `<fullname>-prometheus` (templates/_helpers.tpl
# kube-prometheus-stack.prometheus.serviceAccountName), the one its IAM role for remote writes trusts.
PROMETHEUS_SERVICE_ACCOUNT = f"{STACK_RELEASE}-prometheus"
# Alertmanager's: `<fullname>-alertmanager` (templates/_helpers.tpl
# kube-prometheus-stack.alertmanager.serviceAccountName), the one its IAM role for SNS trusts.
ALERTMANAGER_SERVICE_ACCOUNT = f"{STACK_RELEASE}-alertmanager"
# The AWS managed policy that allows aps:RemoteWrite only
# (https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AmazonPrometheusRemoteWriteAccess.html).
REMOTE_WRITE_POLICY = "AmazonPrometheusRemoteWriteAccess"
# The label (and value) kube-prometheus-stack sets for Grafana's dashboard sidecar, which loads every
# ConfigMap carrying it from any namespace (values.yaml grafana.sidecar.dashboards: label, labelValue,
# searchNamespace: ALL).
DASHBOARD_SIDECAR_LABEL = {"grafana_dashboard": "1"}

# Ray's Grafana dashboards filter on `ray_io_cluster`, which KubeRay's PodMonitors copy from the pod's
# ray.io/cluster label (config/prometheus/podMonitor.yaml).
RAY_CLUSTER_RELABELING = {
    "action": "replace",
    "sourceLabels": ["__meta_kubernetes_pod_label_ray_io_cluster"],
    "targetLabel": "ray_io_cluster",
}
# The kuberay-operator's pod serves /metrics on its container port "http" (helm-chart/kuberay-operator
# templates/deployment.yaml).
KUBERAY_METRICS_PORT = "http"

# Prometheus keeps its TSDB in an emptyDir on the system node's 50 GiB root volume: bounded in size.
RETENTION = "7d"
RETENTION_SIZE = "10GB"


@dataclass(frozen=True)
class RemoteWrite:
    """An Amazon Managed Service for Prometheus workspace Prometheus also writes to: its endpoint (ending in
    `/`), its region (SigV4 signs for it) and the ARN of the managed policy that allows the writes."""

    workspace_url: str
    region: str
    policy_arn: str


@dataclass(frozen=True)
class ObservabilityArgs:
    """Chart versions, where the Ray pods and the KubeRay operator run, what the alerts watch, and an optional
    managed Prometheus to remote-write to."""

    stack_version: str  # of the kube-prometheus-stack chart, e.g. "88.5.3"
    dcgm_version: str  # of the dcgm-exporter chart, e.g. "4.8.2"
    ray_namespace: str  # where the Ray head and workers run: the PodMonitors look there
    kuberay_namespace: str  # where the KubeRay operator runs
    alerts: AlertArgs  # the Serve application and the objectives the alert rules and dashboards watch
    ray_autoscaler: bool = False  # the head pod runs Ray's autoscaler sidecar (in-tree autoscaling): scrape it too
    remote_write: RemoteWrite | None = None  # a managed Prometheus workspace to write to as well
    receivers: Receivers = field(default_factory=Receivers)  # where the alerts go; none: they stay in Alertmanager
    tags: Mapping[str, str] = field(default_factory=dict)  # on the IAM roles


def remote_write_values(remote_write: RemoteWrite, role_arn: pulumi.Input[str]) -> dict[str, Any]:
    """Prometheus' service account assumes the role (IRSA) and signs each write with SigV4 for the workspace's
    region, as the AMP guide configures a Prometheus on EKS
    (https://docs.aws.amazon.com/prometheus/latest/userguide/AMP-onboard-ingest-metrics-existing-Prometheus.html)."""
    return {
        "serviceAccount": {"annotations": {"eks.amazonaws.com/role-arn": role_arn}},
        "prometheusSpec": {
            "remoteWrite": [
                {"url": f"{remote_write.workspace_url}api/v1/remote_write", "sigv4": {"region": remote_write.region}}
            ]
        },
    }


def stack_values(
    remote_write: dict[str, Any] | None = None, alertmanager: dict[str, Any] | None = None
) -> dict[str, Any]:
    """kube-prometheus-stack's values; `remote_write` (remote_write_values) adds the managed Prometheus,
    `alertmanager` (receivers.alertmanager_values) the alerts' receivers."""
    on_system = {"nodeSelector": dict(SYSTEM_NODE_SELECTOR)}
    remote_write = remote_write or {"prometheusSpec": {}}
    alertmanager = alertmanager or {}
    return {
        "prometheusOperator": {
            **on_system,
            "resources": PROMETHEUS_OPERATOR_RESOURCES,
            "admissionWebhooks": {"patch": dict(on_system)},
        },
        "prometheus": {
            **remote_write,
            "prometheusSpec": {
                **on_system,
                "resources": PROMETHEUS_RESOURCES,
                "retention": RETENTION,
                "retentionSize": RETENTION_SIZE,
                **remote_write["prometheusSpec"],
            },
        },
        "alertmanager": {
            **alertmanager,
            "alertmanagerSpec": {
                **on_system,
                "resources": ALERTMANAGER_RESOURCES,
                **alertmanager.get("alertmanagerSpec", {}),
            },
        },
        "grafana": {**on_system, "resources": GRAFANA_RESOURCES},
        "kube-state-metrics": {**on_system, "resources": KUBE_STATE_METRICS_RESOURCES},
        # EKS runs the scheduler, controller manager and etcd off the cluster's nodes: nothing to scrape,
        # and their default targets would only raise the chart's "...Down" alerts.
        "kubeControllerManager": {"enabled": False},
        "kubeScheduler": {"enabled": False},
        "kubeEtcd": {"enabled": False},
    }


def dcgm_values() -> dict[str, Any]:
    # The chart's ServiceMonitor needs the release label for Prometheus to select it.
    return {**gpu_node_scheduling(), "serviceMonitor": {"additionalLabels": dict(RELEASE_LABEL)}}


def _pod_monitor(
    name: str, namespace: str, selector: Mapping[str, str], endpoints: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": dict(RELEASE_LABEL)},
        # No jobLabel (a pod label to take the job name from): the job is "monitoring/<name>", per monitor.
        "spec": {
            "namespaceSelector": {"matchNames": [namespace]},
            "selector": {"matchLabels": dict(selector)},
            "podMetricsEndpoints": endpoints,
        },
    }


def readdressed(port: int) -> dict[str, Any]:
    """The pod's address on `port`: the head's other metrics servers listen on ports its container does not declare
    (declaring them would change the head's template and so replace the RayService), and a PodMonitor selects only
    declared ports, so their targets are the `metrics` port's with the address relabelled, as the PodMonitor CRD
    says to scrape a port "which isn't exposed" (crd-podmonitors.yaml, portNumber). The pods' IPs are IPv4."""
    return {
        "action": "replace",
        "sourceLabels": ["__meta_kubernetes_pod_ip"],
        "targetLabel": "__address__",
        "replacement": f"$1:{port}",
    }


def pod_monitors(ray_namespace: str, kuberay_namespace: str, ray_autoscaler: bool = False) -> list[dict[str, Any]]:
    """The Ray head (its metrics port, the dashboard's and, with Ray's autoscaler, the autoscaler's), every Ray
    worker and the KubeRay operator, as KubeRay documents them (config/prometheus/podMonitor.yaml, the same at v1.4.0
    and v1.7.0)."""
    ray_endpoint = {"port": RAY_METRICS_PORT, "relabelings": [RAY_CLUSTER_RELABELING]}
    head_endpoints = [
        ray_endpoint,
        *(
            {"port": RAY_METRICS_PORT, "relabelings": [RAY_CLUSTER_RELABELING, readdressed(port)]}
            for port in head_metrics_ports(ray_autoscaler)
        ),
    ]
    return [
        _pod_monitor("ray-head", ray_namespace, {RAY_NODE_TYPE_LABEL: "head"}, head_endpoints),
        _pod_monitor("ray-workers", ray_namespace, {RAY_NODE_TYPE_LABEL: "worker"}, [ray_endpoint]),
        _pod_monitor(
            "kuberay-operator", kuberay_namespace, KUBERAY_OPERATOR_SELECTOR, [{"port": KUBERAY_METRICS_PORT}]
        ),
    ]


def monitoring_objects(args: ObservabilityArgs) -> list[dict[str, Any]]:
    """Everything besides the charts: the PodMonitors, the alert rules and the dashboards."""
    return [
        *pod_monitors(args.ray_namespace, args.kuberay_namespace, args.ray_autoscaler),
        prometheus_rule("ray-llm-eks", NAMESPACE, dict(RELEASE_LABEL), args.alerts),
        *dashboard_config_maps(args.alerts.application, NAMESPACE, dict(DASHBOARD_SIDECAR_LABEL)),
    ]


def observability_outputs() -> dict[str, str]:
    """How to open Grafana (user admin) and Prometheus from a machine with the cluster's kubeconfig."""
    prometheus = f"{PROMETHEUS_SERVICE} {PROMETHEUS_PORT}:{PROMETHEUS_PORT}"
    return {
        "grafanaPortForwardCommand": f"kubectl -n {NAMESPACE} port-forward svc/{GRAFANA_SERVICE} 3000:80",
        "grafanaPasswordCommand": f"kubectl -n {NAMESPACE} get secret {GRAFANA_SERVICE} "
        "-o jsonpath='{.data.admin-password}' | base64 -d",
        "prometheusPortForwardCommand": f"kubectl -n {NAMESPACE} port-forward svc/{prometheus}",
        # In-cluster, like serveEndpoint: tools.verify port-forwards to it and reads the PD figures.
        "prometheusEndpoint": f"http://{PROMETHEUS_SERVICE}.{NAMESPACE}.svc.cluster.local:{PROMETHEUS_PORT}",
    }


class Observability(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        args: ObservabilityArgs,
        cluster: Cluster,
        system_nodes: pulumi.Resource,
        gpu_nodes: pulumi.Resource,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("ray-llm-eks:observability:Observability", name, None, opts)
        children = Children(self, name)
        remote_write = None
        if args.remote_write is not None:
            remote_write = remote_write_values(args.remote_write, self._remote_write_role(name, args, cluster).arn)
        alertmanager = None
        if args.receivers.configured:
            role = self._sns_role(name, args, cluster) if args.receivers.sns_topic_arn else None
            alertmanager = alertmanager_values(args.receivers, GROUP_LABEL, GROUP, role.arn if role else None)
        stack = pinned_release(
            children,
            STACK_RELEASE,
            Chart("kube-prometheus-stack", PROMETHEUS_COMMUNITY_REPO, args.stack_version),
            NAMESPACE,
            stack_values(remote_write, alertmanager),
            cluster.provider,
            [system_nodes],
        )
        if args.receivers.secret_files():
            # After the release, which creates the namespace; the Alertmanager pod's mount waits for it.
            k8s.core.v1.Secret(
                children.name(SECRET_NAME),
                metadata=k8s.meta.v1.ObjectMetaArgs(name=SECRET_NAME, namespace=NAMESPACE),
                type="Opaque",
                string_data=args.receivers.secret_files(),
                opts=children.opts(provider=cluster.provider, depends_on=[stack]),
            )
        # After the stack: the exporter's ServiceMonitor needs the CRDs the stack installs.
        pinned_release(
            children,
            "dcgm-exporter",
            Chart("dcgm-exporter", DCGM_REPO, args.dcgm_version),
            NAMESPACE,
            dcgm_values(),
            cluster.provider,
            [stack, gpu_nodes],
        )
        pod_security_patch(children, NAMESPACE, MONITORING_LEVEL, cluster.provider, stack)
        # After the release, which creates the namespace (its pods run unguarded until the NetworkPolicies exist, on a
        # first deploy only).
        objects = [(f"{obj['kind'].lower()}-{obj['metadata']['name']}", obj) for obj in monitoring_objects(args)]
        objects += [(network_policy_role(policy), policy) for policy in monitoring_network_policies()]
        for child, manifest in objects:
            declare_manifest(children, child, manifest, children.opts(provider=cluster.provider, depends_on=[stack]))
        self.register_outputs({})

    def _remote_write_role(self, name: str, args: ObservabilityArgs, cluster: Cluster) -> aws.iam.Role:
        assert args.remote_write is not None
        child = pulumi.ResourceOptions(parent=self)
        role = service_account_role(
            f"{name}-remote-write", cluster, NAMESPACE, PROMETHEUS_SERVICE_ACCOUNT, args.tags, child
        )
        aws.iam.RolePolicyAttachment(
            f"{name}-remote-write", role=role.name, policy_arn=args.remote_write.policy_arn, opts=child
        )
        return role

    def _sns_role(self, name: str, args: ObservabilityArgs, cluster: Cluster) -> aws.iam.Role:
        """Alertmanager's role: sns:Publish on the one topic."""
        assert args.receivers.sns_topic_arn is not None
        child = pulumi.ResourceOptions(parent=self)
        role = service_account_role(
            f"{name}-alertmanager", cluster, NAMESPACE, ALERTMANAGER_SERVICE_ACCOUNT, args.tags, child
        )
        policy = json.dumps(sns_publish_policy(args.receivers.sns_topic_arn))
        aws.iam.RolePolicy(f"{name}-alertmanager-sns", role=role.id, policy=policy, opts=child)
        return role
