"""The lab's fixtures: the product's (tests/conftest.py: each shipped stack under Pulumi's mocks, the operator
allow-list every offline run needs, a local OpenAI API), and the GPU smoke's tiny model."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.tiny_model import write_model
from tests.conftest import api, dev, kuberay_stack, openai_server, operator_allow_list, prod, shipped  # noqa: F401


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`lab.tiny_model`'s model, written once per session; tests read it and never change it."""
    return write_model(tmp_path_factory.mktemp("tiny"))
