"""The command line: `run` (on the GPU host), from the serve configs the 2026-12-07 run used (its record's cfg/)."""

from __future__ import annotations

import argparse
from pathlib import Path

import lab.kv_offload_gpu
from lab.kv_offload_gpu.chat import ChatPlan
from lab.prefix_cache_gpu.cli import positive_ints
from lab.prefix_cache_gpu.teacher import TeacherPlan

PARTS = ("teacher", "chat")
# The earlier run's cached engine at an L4's memory: 89 blocks of 8 layers x 2,162,688 bytes
# (docs/bench/2026-12-06-prefix-cache/README.md, "The cache layout each engine chose").
L4_KV_CACHE_BYTES = 89 * 8 * 2_162_688
# The serve configs the run used, written by the stack before it refused the tier for a hybrid model (maxModelLen
# 4096; and prefixCaching on with prefillKvOffloadGiB 32): the crash that refusal comes from is in the same record.
RECORDED_CONFIGS = Path(__file__).resolve().parents[1] / "records" / "2026-12-07-kv-offload" / "cfg"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m lab.kv_offload_gpu", description=(lab.kv_offload_gpu.__doc__ or "").split("\n\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="the three engines, the teacher-forced passes and the chat load")
    run.add_argument("--default-config", type=Path, default=RECORDED_CONFIGS / "default.json")
    run.add_argument("--tiered-config", type=Path, default=RECORDED_CONFIGS / "tiered.json")
    run.add_argument("--model-dir", type=Path, required=True, help="the model (tools.tiny_model --shape full)")
    run.add_argument("--out", type=Path, required=True)
    run.add_argument(
        "--gpu-memory-of", type=int, default=23034, metavar="MIB", help="the GPU each engine stands in for"
    )
    run.add_argument("--host-gpu-mib", type=int, help="this GPU's memory (default: nvidia-smi's answer)")
    run.add_argument("--kv-cache-bytes", type=int, default=L4_KV_CACHE_BYTES, help="each engine's KV cache")
    run.add_argument("--levels", type=positive_ints, default=[16, 4, 1], help="concurrency levels, in this order")
    run.add_argument("--parts", default="teacher,chat", type=lambda text: tuple(text.split(",")))
    run.add_argument("--start-timeout", type=float, default=900)
    run.add_argument("--deadline-s", type=float, default=3600, help="start no chat level after this many seconds")
    run.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "run":
        args.teacher, args.chat = TeacherPlan(), ChatPlan()
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from lab.kv_offload_gpu.run import run

    return run(args)
