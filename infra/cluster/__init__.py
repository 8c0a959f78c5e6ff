"""The cluster: the EKS control plane, its node role and add-ons, the Kubernetes provider every object goes
through (`eks`), and what the parts above declare on it: Helm releases (`helm`) and IAM roles for service accounts
(`irsa`).

Imports: infra.kube, infra.settings, infra.components.
"""
