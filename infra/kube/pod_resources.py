"""What each of the stack's pods asks of its node: the one source of their resources, which the components use as they
are and the settings add up (infra/settings/footprint.py)."""

from __future__ import annotations

# The Ray head only coordinates: it fits an m7i.xlarge (4 vCPU, 16 GiB) beside the system pods.
HEAD_RESOURCES = {"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"memory": "8Gi"}}
# KubeRay's in-tree autoscaler, a sidecar in the head pod with Serve autoscaling.
RAY_AUTOSCALER_RESOURCES = {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"memory": "512Mi"}}
# The kuberay-operator chart's default 100m CPU limit throttles reconciles while a model-sized RayService comes up:
# it may burst to 500m, and asks 100m, so the system node keeps room for a mirror Job beside the head.
KUBERAY_OPERATOR_RESOURCES = {
    "requests": {"cpu": "100m", "memory": "512Mi"},
    "limits": {"cpu": "500m", "memory": "512Mi"},
}
# What the metrics stack reserves on the system nodes (the chart sets no requests). CPU limits are left off:
# Prometheus may burst while it compacts.
PROMETHEUS_RESOURCES = {"requests": {"cpu": "300m", "memory": "1536Mi"}, "limits": {"memory": "3Gi"}}
GRAFANA_RESOURCES = {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}}
PROMETHEUS_OPERATOR_RESOURCES = {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}}
KUBE_STATE_METRICS_RESOURCES = {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}}
ALERTMANAGER_RESOURCES = {"requests": {"cpu": "25m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}}
# The model mirror streams the Hub's files to S3: network-bound, so a quarter core is its floor, and with no CPU
# limit it uses what the node has idle. Its request must fit beside a running head: a model change runs it then.
MIRROR_RESOURCES = {"requests": {"cpu": "250m", "memory": "2Gi"}, "limits": {"memory": "4Gi"}}
# The image pre-puller (infra/serving/rayservice.py build_prepull_daemonset), on every node: a sleep, which needs
# almost nothing.
PREPULL_RESOURCES = {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}}
# The EKS add-ons' pods on every node group, by the requests of their manifests: CoreDNS, 2 replicas of 100m and
# 70Mi (coredns/deployment kubernetes/coredns.yaml.sed, which EKS's add-on keeps), kube-proxy 100m (EKS's
# kube-proxy DaemonSet), aws-node 25m (aws/amazon-vpc-cni-k8s config/master/aws-k8s-cni.yaml).
EKS_ADDON_RESOURCES = {
    "coredns": ({"requests": {"cpu": "100m", "memory": "70Mi"}}, 2),
    "kube-proxy": ({"requests": {"cpu": "100m"}}, 1),
    "aws-node": ({"requests": {"cpu": "25m"}}, 1),
}
