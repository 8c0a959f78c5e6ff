"""The serving image on every node before a Ray pod is placed there: a DaemonSet whose one container runs the DLC image.

The kubelet pulls a pod's images once the pod is bound to its node, and the DaemonSet controller makes a pod for each
node that joins (https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/), so each node starts its pull as
it joins: before its node group is ACTIVE, before the device plugins are installed and the RayService is created
(which wait for that). A Ray pod placed on the node afterwards finds the image there (the pods ask IfNotPresent: a
tag that is not `latest`, https://kubernetes.io/docs/concepts/containers/images/#imagepullpolicy-defaulting). The
container keeps running, so the image is in use and the kubelet's image garbage collection, which removes only images
no container uses (https://kubernetes.io/docs/concepts/architecture/garbage-collection/#containers-images), keeps it
for an engine restarted on the node. It tolerates the GPU taint and selects no node: the Ray head and the mirror Job
run the same image on the system nodes.
"""

from __future__ import annotations

from typing import Any

from infra.settings.footprint import PREPULL_RESOURCES
from infra.settings.scheduling import GPU_TOLERATION

NAME = "image-prepull"
LABELS = {"app.kubernetes.io/name": NAME}
# `nobody`: the container only sleeps.
NOBODY = 65534


def build_prepull_daemonset(image: str, namespace: str) -> dict[str, Any]:
    """The apps/v1 DaemonSet that keeps `image` on every node, as unprivileged as a pod gets."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": NAME,
            "namespace": namespace,
            # Nothing waits for it: a Ray pod placed before the pull ends pulls the image itself, so `pulumi up` need
            # not wait for every node's pull of a new dlcImage (the provider's default await for a DaemonSet's
            # rollout, pulumi-kubernetes provider/pkg/await).
            "annotations": {"pulumi.com/skipAwait": "true"},
        },
        "spec": {
            "selector": {"matchLabels": dict(LABELS)},
            # A new dlcImage is pulled on every node at once, not one node after another.
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%"}},
            "template": {
                "metadata": {"labels": dict(LABELS)},
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
