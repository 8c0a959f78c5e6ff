"""The cluster: the EKS control plane and its Kubernetes provider, Helm releases and IRSA roles (docs/layout.md#layout).

Imports: infra.kube, infra.settings, infra.components."""
