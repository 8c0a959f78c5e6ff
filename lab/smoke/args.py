"""The command line: every option, grouped by the job it drives, checked before anything starts."""

from __future__ import annotations

import argparse
from pathlib import Path

import lab.smoke
from infra.serving.serve_config import KV_ROLES
from lab.smoke.bench import BENCH_WORKLOADS, CHAT
from lab.smoke.metrics import METRICS_PORT
from lab.smoke.overrides import KV_ROLE_CHOICES, SHARED_GPU_EXECUTORS
from lab.smoke.update import UPDATE_STEP_NAMES
from tools.project import key_value_pairs


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number")
    return value


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m lab.smoke", description=(lab.smoke.__doc__ or "").split("\n\n")[0])
    _app_options(parser)
    _engine_options(parser)
    _check_options(parser)
    _bench_options(parser)
    _update_options(parser)
    args = parser.parse_args(argv)
    args.config = key_value_pairs(args.config, "--config", parser)
    args.model_dir_of = {
        key: Path(value) for key, value in key_value_pairs(args.model_dir_of, "--model-dir-of", parser).items()
    }
    unknown_workloads = set(args.bench_workload) - set(BENCH_WORKLOADS)
    if unknown_workloads:
        parser.error(f"--bench-workload {','.join(sorted(unknown_workloads))}: allowed are {','.join(BENCH_WORKLOADS)}")
    unknown_steps = set(args.update_steps) - set(UPDATE_STEP_NAMES)
    if unknown_steps:
        parser.error(f"--update-steps {','.join(sorted(unknown_steps))}: allowed are {','.join(UPDATE_STEP_NAMES)}")
    return args


def _app_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("the app")
    group.add_argument("--stack", default="dev", help="stack whose config builds the app (Pulumi.<stack>.yaml)")
    group.add_argument("--model-dir", type=Path, required=True, help="local model directory (lab.tiny_model)")
    group.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a stack setting changed for this run, as `pulumi config set` would (e.g. prefillReplicas=2)",
    )
    group.add_argument(
        "--aggregated",
        action="store_true",
        help="baseline: build_openai_app, decode's engine alone (decodeReplicas of it), a GPU each",
    )
    group.add_argument(
        "--kv-roles",
        choices=sorted(KV_ROLE_CHOICES),
        help=f"kv_role of prefill/decode (default: what the stack emits, {KV_ROLES['prefill']}/{KV_ROLES['decode']})",
    )
    group.add_argument(
        "--api-key-auth",
        action="store_true",
        help="serve the app as a stack with an exposed endpoint emits it, behind the API-key ingress, with two fresh "
        "keys; check that a request without one is refused, each key is served, a rotated keys file is honoured, and "
        "no key reaches Ray's logs",
    )
    group.add_argument(
        "--model-dir-of",
        action="append",
        default=[],
        metavar="ID=DIR",
        help="local directory of a model the stack serves beside the pair (--config models=...; docs/models.md)",
    )
    group.add_argument(
        "--adapters-dir",
        type=Path,
        help="folders of the listed LoRA adapters (python -m lab.lora_adapters adapters), served from a local S3 "
        "server where the serve config loads them; then check every model and adapter answers",
    )
    group.add_argument("--dry-run", action="store_true", help="build, print and validate the config; start nothing")


def _engine_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("the engines on this host")
    group.add_argument("--gpu-memory-utilization", type=float, default=0.3)
    group.add_argument(
        "--gpu-memory-of",
        type=int,
        metavar="MIB",
        help="stand in for a smaller GPU (23034 for a g6's L4, as nvidia-smi reports it): vLLM's default share of "
        "that much memory, and the batch limits vLLM picks for it; replaces --gpu-memory-utilization",
    )
    group.add_argument(
        "--max-model-len",
        type=lambda text: None if text == "stack" else int(text),
        default=512,
        help="context length of the engines; 'stack' keeps the stack's maxModelLen",
    )
    group.add_argument(
        "--enforce-eager",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="skip torch.compile and CUDA graphs (--no-enforce-eager runs them, as production does)",
    )
    group.add_argument(
        "--unset-env",
        action="append",
        default=[],
        metavar="NAME",
        help="leave out an env var the stack sets on the engines, to show what it is for",
    )
    group.add_argument(
        "--share-gpu",
        action="store_true",
        help="every engine on one GPU, an equal share each (prefill and decode, or the baseline's replicas)",
    )
    group.add_argument(
        "--shared-gpu-executor",
        choices=SHARED_GPU_EXECUTORS,
        default="v2",
        help="with --share-gpu and several replicas of one engine config: vLLM's Ray executor they run on "
        "(v2: vLLM 0.26's default, as the stack keeps; classic: the one whose engines died on their first request)",
    )


def _check_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("the checks")
    group.add_argument("--max-tokens", type=int, default=64, help="tokens per timed completion")
    group.add_argument("--requests", type=int, default=5, help="timed completions after the first")
    group.add_argument("--deploy-timeout", type=float, default=600, help="seconds to wait for RUNNING")
    group.add_argument("--ray-temp-dir", default="/tmp/ray", help="Ray's temp dir; its logs are checked")
    group.add_argument(
        "--metrics-out",
        type=Path,
        metavar="FILE",
        help=f"start Ray with --metrics-export-port={METRICS_PORT}, scrape it before and after the load, write the "
        "metric names to FILE and the PD-related samples to FILE's stem + '-pd-samples.txt'",
    )


def _bench_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("the benchmark")
    group.add_argument(
        "--bench",
        type=lambda text: [int(c) for c in text.split(",")],
        default=[],
        metavar="C1,C2,...",
        help="after the checks, run `vllm bench serve` at each concurrency",
    )
    group.add_argument(
        "--bench-workload",
        type=lambda text: tuple(text.split(",")),
        default=(CHAT,),
        metavar="W1,W2,...",
        help="at each concurrency, in order: chat (random prompts of --bench-input-len through the chat endpoint), "
        "prefix (1,536-token prefixes shared by 50 requests each, 64 tokens of their own, 32 out, greedy, through "
        "the completions endpoint), random (the same lengths, nothing shared); with --metrics-out, each level's "
        "counters per engine are written beside its result",
    )
    group.add_argument("--bench-input-len", type=int, default=1024)
    group.add_argument("--bench-output-len", type=int, default=128)
    group.add_argument("--bench-dir", type=Path, default=Path("bench-results"))
    group.add_argument("--bench-label", default="pd", help="prefix of the result files")
    group.add_argument("--bench-timeout", type=float, default=600, help="seconds one concurrency level may take")
    group.add_argument(
        "--bench-requests",
        type=positive_int,
        metavar="N",
        help="requests per concurrency level (default: four per concurrent request, at least 16)",
    )


def _update_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("the update scenario")
    group.add_argument(
        "--update-scenario",
        type=Path,
        metavar="OUT.json",
        help="after the checks, replay KubeRay's in-place update three times (a good change, a broken one, the "
        "rollback) under traffic; the record goes to OUT.json, the dashboard's raw answers beside it",
    )
    group.add_argument("--update-step-timeout", type=float, default=300, help="seconds one update step may take")
    group.add_argument(
        "--update-steps",
        type=lambda text: tuple(text.split(",")),
        default=UPDATE_STEP_NAMES,
        help=f"which of the update steps to run, in order (default {','.join(UPDATE_STEP_NAMES)})",
    )
    group.add_argument(
        "--update-settle", type=float, default=5, help="seconds of traffic after an update step's final verdict"
    )
