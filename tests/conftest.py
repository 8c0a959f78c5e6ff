"""Shared fixtures: each shipped stack evaluated once per session under Pulumi's mocks, and a local OpenAI API."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.config import ConfigError
from tests.openai_server import OpenAIServer
from tools import offline
from tools.offline import StackRun, run_stack
from tools.project import PROJECT, SHIPPED_STACKS
from tools.tiny_model import write_model

# Ray's validation classes must never reach for a cluster in tests.
os.environ.setdefault("RAY_ENABLE_AUTO_CONNECT", "0")

# The public range a test operator deploys from (global unicast, not an RFC 5737 documentation range).
OPERATOR_CIDRS = ["100.24.10.0/24"]
API_ALLOW_LIST_KEY = f"{PROJECT}:apiPublicAccessCidrs"
# The stack files' values as shipped, for the tests of what a fresh clone does before its user adds an address.
SHIPPED_STACK_FILE_VALUES = offline._stack_file_values


@pytest.fixture(scope="session", autouse=True)
def operator_allow_list() -> Iterator[None]:
    """Every stack file as a new user has it after the README's first step, which adds their address.

    No shipped stack carries an API allow-list (a real one is the user's own address); the step
    `pulumi config set --path 'apiPublicAccessCidrs[0]' <ip>/32` writes it into Pulumi.<stack>.yaml.
    """
    stack_file_values = offline._stack_file_values

    def with_allow_list(stack: str) -> dict[str, Any]:
        return {API_ALLOW_LIST_KEY: OPERATOR_CIDRS, **stack_file_values(stack)}

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(offline, "_stack_file_values", with_allow_list)
        yield


def rejection(overrides: dict[str, Any], **run_options: Any) -> ConfigError:
    """The ConfigError the program raises for these overrides, after checking it declared no resource first."""
    with pytest.raises(ConfigError) as caught:
        run_stack(overrides, **run_options)
    assert caught.value.declared_resources == []
    return caught.value


@functools.cache
def shipped_run(stack: str) -> StackRun:
    """A shipped stack evaluated once per session, whichever fixture or test asks for it first."""
    return run_stack(stack=stack)


@pytest.fixture(scope="session")
def dev() -> StackRun:
    return shipped_run("dev")


@pytest.fixture(scope="session")
def prod() -> StackRun:
    return shipped_run("prod")


@pytest.fixture(scope="session", params=SHIPPED_STACKS)
def shipped(request: pytest.FixtureRequest) -> StackRun:
    return shipped_run(request.param)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`tools.tiny_model`'s model, written once per session; tests read it and never change it."""
    return write_model(tmp_path_factory.mktemp("tiny"))


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
