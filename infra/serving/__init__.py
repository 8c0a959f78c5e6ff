"""The serving layer: the KubeRay operator (`kuberay`), the Serve app as data (`serve_config`, `serve_auth`,
`prefix_routing`, and `code_package`: how the stack's own code reaches the Ray pods), the RayService and its load
balancer (`rayservice`), the component that declares them (`serve_app`), the wait for the live app (`rollout`,
`rollout_status`), and the model: where it comes from (`model_source`) and its S3 cache (`model_cache`).

Imports: infra.kube, infra.settings, infra.components, infra.cluster.
"""
