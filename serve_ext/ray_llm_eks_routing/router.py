"""Ray Serve LLM 2.58's PrefixCacheAffinityRouter, with the routing loop that can spin forever taken out.

Ray 2.58's class (ray/llm/_internal/serve/routing_policies/prefix_aware/prefix_aware_router.py) derives from
`LocalityMixin, MultiplexMixin, RequestRouter`, without the `FIFOMixin` Serve's default power-of-two router has
(ray/serve/_private/request_router/pow_2_router.py). `RequestRouter._fulfill_pending_requests` runs up to two routing
tasks per replica; a task that finds no request left to route (the others hold them) still chooses a replica and hands
it to `_fulfill_next_pending_request(replica, None)`, which in `RequestRouter` fulfils only the request matching the
metadata (ray/serve/_private/request_router/request_router.py): with none it fulfils nothing, and the task loops again
without awaiting anything that suspends, so the router's event loop never runs the other tasks. Three or more requests
at once to two replicas hang every call through that router (tests/test_prefix_routing.py).

Here a task with a request of its own fulfils exactly that request (the prefix choice was made for it), as Ray's
class does; a task without one gives its replica to the oldest waiting request, as `FIFOMixin` does, so it ends.
Taking `FIFOMixin` for every task would end the loop too, but would hand a prefix choice to whichever request waited
longest.
"""

from ray.llm._internal.serve.routing_policies.prefix_aware.prefix_aware_router import (
    PrefixCacheAffinityRouter as RayPrefixCacheAffinityRouter,
)
from ray.serve._private.common import RequestMetadata
from ray.serve._private.request_router.replica_wrapper import RunningReplica
from ray.serve._private.request_router.request_router import FIFOMixin, RequestRouter


class PrefixCacheAffinityRouter(FIFOMixin, RayPrefixCacheAffinityRouter):
    def _fulfill_next_pending_request(
        self, replica: RunningReplica, request_metadata: RequestMetadata | None = None
    ) -> None:
        if request_metadata is None:
            FIFOMixin._fulfill_next_pending_request(self, replica, request_metadata)
        else:
            RequestRouter._fulfill_next_pending_request(self, replica, request_metadata)
