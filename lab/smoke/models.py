"""Several models behind the one endpoint (docs/models.md): the adapters staged in a local S3 server's bucket, where
the stack's serve config loads them from, and the checks that every model and adapter is served.

With `--adapters-dir DIR` (folders as `python -m lab.lora_adapters adapters` writes them), each aggregated model's
adapters are copied to `<root>/<ADAPTER_BUCKET>/<adapterPrefix>/<adapter>/` and rclone's S3 server
(lab/s3_load.py local_s3) serves the root for the whole run: Ray, started inside it, hands its AWS_ENDPOINT_URL and
credentials to the ingress (which lists the adapters) and to the replicas (which download one on its first request).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import openai

from lab.smoke import deploy
from lab.smoke.app import ADAPTER_BUCKET
from tools.probe import CheckResult, EmptyCompletion, Report, client, model_ids, stream_chat

if TYPE_CHECKING:
    from infra.settings.stack_config import StackConfig

# One prompt for every model and adapter, answered greedily: the same prompt gives the same tokens, so an adapter's
# answer differs from its base model's only by the adapter's weights.
PROMPT = "Name three things a GPU cluster needs."
ANSWER_TOKENS = 16


def adapter_pairs(cfg: StackConfig) -> list[tuple[str, str]]:
    """(adapter id, its base model id) of every listed adapter: Ray Serve LLM's id is `<base model id>:<adapter>`."""
    return [(f"{model.id}:{adapter}", model.id) for model in cfg.aggregated_models for adapter in model.adapters]


def served_ids(cfg: StackConfig) -> list[str]:
    """Every id /v1/models should list: each model, and each adapter as `<model>:<adapter>`."""
    return [model.id for model in cfg.models] + [adapter for adapter, _ in adapter_pairs(cfg)]


def stage_adapters(cfg: StackConfig, adapters_dir: Path, root: Path) -> list[Path]:
    """Each listed adapter's folder from `adapters_dir`, copied where the serve config's dynamic LoRA path names it."""
    staged = []
    for model in cfg.aggregated_models:
        for adapter in model.adapters:
            source = adapters_dir / adapter
            if not (source / "adapter_config.json").is_file():
                raise FileNotFoundError(f"{source} holds no adapter_config.json (python -m lab.lora_adapters adapters)")
            staged.append(Path(shutil.copytree(source, root / ADAPTER_BUCKET / model.adapter_prefix / adapter)))
    return staged


def greedy_answer(api: openai.OpenAI, model: str) -> str:
    """The model's answer to PROMPT, greedy (temperature 0) and of a fixed length (vLLM's ignore_eos)."""
    _, text = stream_chat(api, model, PROMPT, ANSWER_TOKENS, extra_body={"ignore_eos": True, "temperature": 0})
    return text


def check_models(report: Report, cfg: StackConfig, api_key: str | None = None, timeout_s: float = 300) -> None:
    """/v1/models lists every model and adapter, each answers the same greedy chat, and each adapter's answer differs
    from its base model's (an adapter's first request downloads it from S3, hence the long timeout)."""
    api = client(f"{deploy.SERVE_URL}/v1", timeout_s, api_key)
    wanted = served_ids(cfg)
    try:
        listed = model_ids(api)
        answers = {model: greedy_answer(api, model) for model in wanted}
    except (openai.OpenAIError, EmptyCompletion) as error:
        report.record("models", CheckResult(False, f"the endpoint failed: {error}"))
        return
    missing = sorted(set(wanted) - set(listed))
    report.record("models_listed", CheckResult(not missing, f"/v1/models lists {listed}; missing {missing}"))
    silent = sorted(model for model, answer in answers.items() if not answer)
    report.record("models_answer", CheckResult(not silent, f"{len(answers)} greedy answers; empty: {silent}"))
    same = sorted(adapter for adapter, base in adapter_pairs(cfg) if answers[adapter] == answers[base])
    report.record(
        "adapters_differ",
        CheckResult(not same, f"adapters answering as their base model: {same}; answers {answers}"),
    )
