"""What `pulumi preview --policy-pack policy` runs: serve the pack to the engine.

Constructing `PolicyPack` starts the analyzer's gRPC server and blocks, so this file does nothing
else and nothing imports it; the policies live in `ray_llm_policies`, where the tests import them.
"""

from pulumi_policy import PolicyPack
from ray_llm_policies.pack import PACK_NAME, POLICIES

PolicyPack(name=PACK_NAME, policies=POLICIES)
