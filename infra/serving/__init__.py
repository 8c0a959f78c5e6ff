"""The serving layer: KubeRay, the Serve app, the RayService, the rollout's wait and the model cache (each module:
docs/layout.md#layout).

Imports: infra.kube, infra.settings, infra.components, infra.cluster."""
