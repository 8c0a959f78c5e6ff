"""Kubernetes facts the stack's parts share, as plain data: where pods land (`scheduling`: node labels, the GPU taint,
the compile cache's host path), the labels one part selects another's pods by (`pod_labels`), the namespaces the stack
creates (`namespaces`) and each namespace's Pod Security level (`pod_security`). No setting lives here: the settings
check their values against these facts.

Imports: nothing else of infra/.
"""
