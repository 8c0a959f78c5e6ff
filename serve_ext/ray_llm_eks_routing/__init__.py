"""Prefix-aware routing for the Serve app, loaded by the request routers in the cluster, never under `pulumi up`."""
