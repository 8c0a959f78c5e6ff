"""Benchmark: how long a whole stack takes to evaluate offline (not a test; run it by hand).

    ./.venv-test/bin/python -m tests.bench_stack

The first run includes importing the Pulumi SDKs; later runs in the same process show the cost of
the program itself.
"""

from __future__ import annotations

import statistics
import time

from tools.offline import run_stack
from tools.project import SHIPPED_STACKS

REPEATS = 20


def main() -> None:
    started = time.perf_counter()
    first = run_stack(stack="dev")
    print(f"first dev run (imports included): {time.perf_counter() - started:.2f} s, {len(first.resources)} resources")
    for stack in SHIPPED_STACKS:
        timings = []
        for _ in range(REPEATS):
            started = time.perf_counter()
            run_stack(stack=stack)
            timings.append(time.perf_counter() - started)
        print(
            f"{stack}: median {statistics.median(timings) * 1000:.0f} ms, "
            f"max {max(timings) * 1000:.0f} ms over {REPEATS} runs"
        )


if __name__ == "__main__":
    main()
