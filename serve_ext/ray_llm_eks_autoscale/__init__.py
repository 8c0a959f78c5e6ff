"""Latency-objective autoscaling for the Serve app, run by Ray Serve's controller, never under `pulumi up`."""
