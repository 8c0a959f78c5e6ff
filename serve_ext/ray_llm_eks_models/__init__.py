"""The app builder of a stack with several models, loaded by Serve's build task in the cluster, never under
`pulumi up`."""
