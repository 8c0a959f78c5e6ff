"""Entry point of `pulumi up`: load the config (EC2 describes the GPU type), build the stack, export its outputs."""

import pulumi

from infra.nodes.node_groups import describe_instance_type
from infra.settings.config import load_config
from infra.stack import build_stack

for name, value in build_stack(load_config(describe_instance_type=describe_instance_type)).items():
    pulumi.export(name, value)
