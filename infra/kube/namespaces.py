"""The namespaces the stack creates beside the RayService's own (`namespace`), and whose each is.

Plain data in the bottom layer, so that the settings can refuse a `namespace` equal to one of them and the modules
that create them (infra/observability/monitoring.py, infra/serving/model_cache.py) use the same names.
"""

from __future__ import annotations

from collections.abc import Mapping

# kube-prometheus-stack and dcgm-exporter are installed here (observability), by Helm releases that create it.
MONITORING_NAMESPACE = "monitoring"
# The model cache's mirror Job, its service account and Secret (modelCache with a Hugging Face modelSource): the
# ModelCache component creates it as a Namespace object of its own.
MODEL_CACHE_NAMESPACE = "model-cache"

# Whose each is and what creates it, as a refusal names it. The KubeRay operator's (infra/kube/scheduling.py
# OPERATOR_NAMESPACE) and the kube-system namespace the device plugins and the Cluster Autoscaler go in are refused
# by their own rules.
CREATED_NAMESPACES: Mapping[str, str] = {
    MONITORING_NAMESPACE: (
        "the metrics stack's (observability: the kube-prometheus-stack and dcgm-exporter Helm releases create it)"
    ),
    MODEL_CACHE_NAMESPACE: (
        "the model cache's (modelCache with a Hugging Face modelSource: the mirror Job's namespace, created as a "
        "Namespace object of its own)"
    ),
}
