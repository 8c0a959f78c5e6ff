"""The engine both servers run: the stack's aggregated engine with the smoke's one-host overrides, as `vllm serve`.

The smoke's aggregated baseline (lab/smoke/overrides.py `aggregated_overrides`) is the decode side's engine without
its KV connector; with `--gpu-memory-of` it gets vLLM's default share of that GPU's memory and the batch limits vLLM
picks for it, on a host without flashinfer the Triton Gated DeltaNet prefill and sampler. The same rules made the
full-size runs in lab/records/gpu-end-to-end.md, so the two engines here differ from those only in
`enable_prefix_caching`.
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lab.smoke.document import Override
from lab.smoke.host import HostFacts, model_has_mamba_state
from lab.smoke.overrides import SmokeOptions, aggregated_overrides

# Per-request cached prompt tokens in each answer's usage (vllm/entrypoints/openai/cli_args.py
# `enable_prompt_tokens_details`), and no access-log line per request.
SERVE_FLAGS = ("--enable-prompt-tokens-details", "--disable-uvicorn-access-log")


def stack_serve_config(stack: str, settings: Mapping[str, str]) -> dict[str, Any]:
    """The production serve config of `stack` as `pulumi up` builds it (needs requirements.txt's deploy SDKs)."""
    from infra.serving.serve_config import build_serve_config, serve_app_args
    from lab.smoke.app import serve_stack_config

    return build_serve_config(serve_app_args(serve_stack_config(stack, settings)))


def aggregated_engine(
    production: dict[str, Any], model_dir: Path, emulated_gpu: tuple[int, int], host: HostFacts
) -> tuple[dict[str, Any], list[Override]]:
    """(the baseline's llm config, the overrides that made it): the stack's context and CUDA graphs kept."""
    opts = SmokeOptions(
        model_dir=model_dir,
        model_has_mamba_state=model_has_mamba_state(model_dir),
        aggregated=True,
        emulated_gpu=emulated_gpu,
        max_model_len=None,
        enforce_eager=False,
    )
    overrides = aggregated_overrides(production, opts, host)
    document = copy.deepcopy(production)
    for override in overrides:
        override.apply(document)
    return document["applications"][0]["args"]["llm_configs"][0], overrides


def engine_flags(engine_kwargs: Mapping[str, Any]) -> list[str]:
    """vLLM's CLI spelling of engine kwargs: `--max-num-seqs 32`, booleans as `--x` / `--no-x`, dicts as JSON
    (vllm/engine/arg_utils.py `EngineArgs.add_cli_args`: the field name with dashes; bools are BooleanOptionalAction,
    dict fields parse JSON)."""
    flags: list[str] = []
    for key, value in engine_kwargs.items():
        name = key.replace("_", "-")
        if isinstance(value, bool):
            flags.append(f"--{name}" if value else f"--no-{name}")
        elif isinstance(value, dict):
            flags += [f"--{name}", json.dumps(value, sort_keys=True)]
        else:
            flags += [f"--{name}", str(value)]
    return flags


def serve_command(engine: Mapping[str, Any], port: int, prefix_caching: bool) -> list[str]:
    loading = engine["model_loading_config"]
    return [
        sys.executable,
        "-m",
        "vllm.entrypoints.cli.main",
        "serve",
        loading["model_source"],
        "--served-model-name",
        loading["model_id"],
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *engine_flags(engine["engine_kwargs"]),
        "--enable-prefix-caching" if prefix_caching else "--no-enable-prefix-caching",
        *SERVE_FLAGS,
    ]


def serve_env(engine: Mapping[str, Any], base: Mapping[str, str]) -> dict[str, str]:
    """The host's environment (its NCCL/NVSHMEM multicast switches included) and the engine's runtime_env."""
    return {**base, **engine.get("runtime_env", {}).get("env_vars", {})}
