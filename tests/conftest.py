"""Shared stack runs: each shipped stack is evaluated once per test session under Pulumi's mocks."""

from __future__ import annotations

import os

import pytest

from tools.offline import StackRun, run_stack
from tools.project import SHIPPED_STACKS

# Ray's validation classes must never reach for a cluster in tests.
os.environ.setdefault("RAY_ENABLE_AUTO_CONNECT", "0")


@pytest.fixture(scope="session")
def dev() -> StackRun:
    return run_stack(stack="dev")


@pytest.fixture(scope="session")
def prod() -> StackRun:
    return run_stack(stack="prod")


@pytest.fixture(scope="session", params=SHIPPED_STACKS)
def shipped(request: pytest.FixtureRequest) -> StackRun:
    return run_stack(stack=request.param)
