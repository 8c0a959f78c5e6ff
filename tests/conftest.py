"""Shared fixtures: each shipped stack evaluated once per session under Pulumi's mocks, and a local OpenAI API."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

import pytest

from tests.openai_server import OpenAIServer
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


@pytest.fixture(scope="session")
def openai_server() -> Iterator[OpenAIServer]:
    server = OpenAIServer()
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def api(openai_server: OpenAIServer) -> OpenAIServer:
    """The server with its default model and reply; a test may change them for itself."""
    openai_server.reset()
    return openai_server
