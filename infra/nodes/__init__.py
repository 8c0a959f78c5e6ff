"""The nodes: the system and the EFA GPU node groups (`node_groups`), and what the GPU nodes run or need: the
NVIDIA and EFA device plugins (`device_plugins`) and, with autoscaling, the Cluster Autoscaler (`cluster_autoscaler`).

Imports: infra.kube, infra.settings, infra.components, infra.cluster.
"""
