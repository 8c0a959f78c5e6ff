"""The command line: `serve-config` (on a machine with the deploy SDKs) and `run` (on the GPU host)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import lab.prefix_cache_gpu
from lab.prefix_cache_gpu.teacher import TeacherPlan
from lab.smoke.bench import Workload
from tools.project import key_value_pairs

PARTS = ("teacher", "sweep")


def positive_ints(text: str) -> list[int]:
    """`16,64,4,1`: concurrency levels, run in the order given."""
    try:
        levels = [int(item) for item in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated numbers") from None
    if not levels or min(levels) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: every level must be at least 1")
    return levels


def parts(text: str) -> tuple[str, ...]:
    chosen = tuple(text.split(","))
    unknown = set(chosen) - set(PARTS)
    if unknown:
        raise argparse.ArgumentTypeError(f"{','.join(sorted(unknown))}: allowed are {','.join(PARTS)}")
    return chosen


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m lab.prefix_cache_gpu", description=(lab.prefix_cache_gpu.__doc__ or "").split("\n\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    config = commands.add_parser("serve-config", help="write the stack's production serve config as JSON")
    config.add_argument("--stack", default="dev", help="stack whose config builds the app (Pulumi.<stack>.yaml)")
    config.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", help="a stack setting changed")
    config.add_argument("--out", type=Path, required=True)
    again = commands.add_parser("report", help="the teacher-forced comparison again from a saved teacher-raw.json")
    again.add_argument("raw", type=Path, help="teacher-raw.json (or .json.gz) of a run")
    run = commands.add_parser("run", help="both engines, the teacher-forced passes and the sweep, on this GPU host")
    run.add_argument("--serve-config", type=Path, required=True, help="what `serve-config` wrote")
    run.add_argument("--model-dir", type=Path, required=True, help="the model (lab.tiny_model --shape full)")
    run.add_argument("--out", type=Path, required=True, help="folder for the plan, results, engine logs")
    run.add_argument(
        "--gpu-memory-of", type=int, default=23034, metavar="MIB", help="the GPU each engine stands in for"
    )
    run.add_argument("--host-gpu-mib", type=int, help="this GPU's memory (default: nvidia-smi's answer)")
    run.add_argument("--levels", type=positive_ints, default=[16, 64, 4, 1], help="concurrency levels, in this order")
    run.add_argument("--requests", type=int, default=200, help="requests per level, workload and engine")
    run.add_argument("--parts", type=parts, default=PARTS, help="teacher,sweep or either")
    run.add_argument("--start-timeout", type=float, default=600, help="seconds for each engine to answer /health")
    run.add_argument("--deadline-s", type=float, default=3600, help="start no sweep level after this many seconds")
    run.add_argument("--dry-run", action="store_true", help="print the resolved plan; start nothing")
    args = parser.parse_args(argv)
    if args.command == "serve-config":
        args.config = key_value_pairs(args.config, "--config", parser)
    elif args.command == "run":
        args.teacher, args.workload = TeacherPlan(), Workload()
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.command == "serve-config":
        from lab.prefix_cache_gpu.engine import stack_serve_config

        args.out.write_text(json.dumps(stack_serve_config(args.stack, args.config), indent=2) + "\n")
        return 0
    if args.command == "report":
        from lab.prefix_cache_gpu.teacher import report_from_raw

        print(json.dumps(report_from_raw(args.raw), indent=2))
        return 0
    from lab.prefix_cache_gpu.run import run

    return run(args)
