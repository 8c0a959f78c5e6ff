"""Entry point of `pulumi up`: load the config, build the stack, export its outputs."""

import pulumi

from infra.config import load_config
from infra.stack import build_stack

for name, value in build_stack(load_config()).items():
    pulumi.export(name, value)
