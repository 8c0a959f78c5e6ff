"""Observability: kube-prometheus-stack, the DCGM exporter and the PodMonitors (`monitoring`), the Grafana
dashboards (`dashboards`, with Ray's own in `dashboards/`), the alerts (`alerts`), where they go (`receivers`) and the
PromQL both use (`pd_queries`).

Imports: infra.kube, infra.settings, infra.components, infra.cluster.
"""
