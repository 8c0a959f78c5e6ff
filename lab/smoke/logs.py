"""Ray's logs as evidence: DEBUG logging for the NIXL connector alone, and the lines that prove the NIXL backend, the
handshake and a prefill-to-decode KV transfer, and each engine's memory figures.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from infra.serving.serve_config import PD_SIDES
from lab.smoke.deploy import wait_for
from tools.probe import NIXL_BACKEND_LINE, CheckResult, Report

# The NIXL connector logs each finished KV read only at DEBUG. This turns DEBUG on for its modules
# alone, so the proof of a transfer does not cost the engines a flood of unrelated log lines.
NIXL_LOGGER = "vllm.distributed.kv_transfer.kv_connector.v1.nixl"
NIXL_DEBUG_LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"vllm": {"format": "%(levelname)s %(asctime)s [%(name)s:%(lineno)d] %(message)s"}},
    "handlers": {
        "vllm": {"class": "logging.StreamHandler", "formatter": "vllm", "level": "DEBUG", "stream": "ext://sys.stdout"}
    },
    "loggers": {
        "vllm": {"handlers": ["vllm"], "level": "INFO", "propagate": False},
        NIXL_LOGGER: {"level": "DEBUG"},
    },
}
NIXL_HANDSHAKE_LINE = re.compile(r"NIXL compatibility check passed")
# Which engine a NIXL worker process serves: "prefill-<host>-<port>" or "decode-<host>-<port>".
NIXL_WORKER_LINE = re.compile(r"Initializing NIXL worker ((\w+)-\S+)")
# The DEBUG lines that prove a transfer: decode's worker starts a read from prefill's engine...
KV_READ_LINE = re.compile(r"start_load_kv for request (\S+) from remote engine (\S+?)\.? Num")
# ...its scheduler reserved room for the prompt tokens whose KV comes from prefill...
KV_TOKENS_LINE = re.compile(r"update_state_after_alloc: num_external_tokens=([1-9]\d*)")
# ...and each worker reports finished transfers ("done recving" counts the failed ones too).
KV_FINISHED_LINE = re.compile(
    r"get_finished: (\d+) requests done sending and (\d+) requests done recving \((\d+) failed\)"
)
# Ray prefixes forwarded lines with every hop, "(EngineCore pid=1) (RayWorkerProc pid=2) (Worker pid=2) ...".
RAY_LOG_PREFIX = re.compile(r"^(?:\([^()]*\)\s*)*")


ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
# What vLLM logs about each engine's memory at start: weights, the KV cache it could allocate, how many
# tokens and requests that holds, and the hybrid layout's attention block size.
ENGINE_MEMORY_LINE = re.compile(
    r"(Model loading took .*|Available KV cache memory: .*|GPU KV cache size: .*|Maximum concurrency for .*"
    r"|Setting attention block size to .*|Graph capturing finished in .*|init engine .* took .*)"
)


def log_files(ray_temp_dir: Path) -> list[Path]:
    logs = ray_temp_dir / "session_latest" / "logs"
    return sorted(p for p in logs.rglob("*") if p.is_file() and p.suffix in (".log", ".out", ".err"))


@dataclass(frozen=True)
class LogLine:
    process: str  # the process that wrote it (the last pid Ray's prefixes name), else the log file
    message: str  # without Ray's prefixes and colours
    match: re.Match[str]


def read_logs(ray_temp_dir: Path) -> list[tuple[str, str, str]]:
    """Every line of the Ray session's logs as (log file, Ray's prefixes, message), without colours."""
    lines = []
    for path in log_files(ray_temp_dir):
        for raw in path.read_text(errors="replace").splitlines():
            line = ANSI_ESCAPE.sub("", raw).strip()
            prefix = RAY_LOG_PREFIX.match(line)
            end = prefix.end() if prefix else 0
            lines.append((path.name, line[:end], line[end:]))
    return lines


def grep_lines(lines: list[tuple[str, str, str]], pattern: re.Pattern[str]) -> list[LogLine]:
    """Matching lines of `read_logs`, each once although Ray copies them into its parents' logs."""
    hits: dict[tuple[str, str], LogLine] = {}
    for source, prefixes, message in lines:
        match = pattern.search(message)
        if match:
            pids = re.findall(r"pid=(\d+)", prefixes)
            process = f"pid {pids[-1]}" if pids else source
            hits.setdefault((process, message), LogLine(process, message, match))
    return list(hits.values())


def show_hits(hits: list[LogLine], limit: int = 6) -> None:
    for hit in hits[:limit]:
        print(f"    {hit.process}: {hit.message[:300]}", flush=True)


def check_nixl_logs(report: Report, ray_temp_dir: Path, backend: str, wait_s: float = 30) -> None:
    """The NIXL backend of each side, then a finished prefill→decode KV read, from the engines' logs."""
    # Each poll reads the logs once; the checks after a wait use that poll's lines.
    logs: list[tuple[str, str, str]] = []
    sides: dict[str, str] = {}
    backends: list[LogLine] = []

    def both_sides_up() -> bool:
        logs[:] = read_logs(ray_temp_dir)
        sides.clear()
        sides.update({hit.process: hit.match.group(2) for hit in grep_lines(logs, NIXL_WORKER_LINE)})
        backends[:] = grep_lines(logs, NIXL_BACKEND_LINE)
        return {sides.get(hit.process) for hit in backends} >= set(PD_SIDES)

    wait_for("NIXL backend log lines of prefill and decode", both_sides_up, wait_s)
    order = {side: i for i, side in enumerate(PD_SIDES)}
    backends.sort(key=lambda hit: order.get(sides.get(hit.process, ""), len(order)))
    by_side = {f"{sides.get(hit.process, '?')} ({hit.process})": hit.match.group(1) for hit in backends}
    report.record(
        "nixl_backend",
        CheckResult(
            {sides.get(hit.process) for hit in backends} >= set(PD_SIDES) and set(by_side.values()) == {backend},
            f"'Backend {backend} was instantiated' expected in prefill and decode: {by_side or 'no backend line'}",
        ),
    )
    show_hits(backends)
    show_hits(grep_lines(logs, NIXL_HANDSHAKE_LINE), 2)

    def on(side: str, hits: list[LogLine]) -> list[LogLine]:
        return [hit for hit in hits if sides.get(hit.process) == side]

    finished: list[LogLine] = []

    def decode_received() -> bool:
        logs[:] = read_logs(ray_temp_dir)
        finished[:] = grep_lines(logs, KV_FINISHED_LINE)
        return any(int(hit.match.group(2)) > int(hit.match.group(3)) for hit in on("decode", finished))

    wait_for("decode's finished KV reads", decode_received, wait_s)
    reads = [hit for hit in on("decode", grep_lines(logs, KV_READ_LINE)) if hit.match.group(2).startswith("prefill")]
    token_lines = grep_lines(logs, KV_TOKENS_LINE)
    tokens = sorted({int(hit.match.group(1)) for hit in token_lines})
    received = sum(int(hit.match.group(2)) - int(hit.match.group(3)) for hit in on("decode", finished))
    failed = sum(int(hit.match.group(3)) for hit in on("decode", finished))
    sent = sum(int(hit.match.group(1)) for hit in on("prefill", finished))
    report.record(
        "kv_transfer",
        CheckResult(
            bool(reads) and received > 0 and failed == 0,
            f"decode started {len({hit.match.group(1) for hit in reads})} NIXL read(s) from "
            f"{sorted({hit.match.group(2) for hit in reads}) or 'no prefill engine'}, finished {received} "
            f"({failed} failed); prompt tokens whose KV came from prefill: {tokens or 'none logged'}; "
            f"prefill logged {sent} done-sending notification(s)",
        ),
    )
    show_hits(reads, 2)
    show_hits(token_lines, 2)
    show_hits(on("decode", finished), 2)


def report_engine_memory(ray_temp_dir: Path) -> None:
    """vLLM's own account of each engine's memory, and what nvidia-smi sees on every GPU."""
    for hit in grep_lines(read_logs(ray_temp_dir), ENGINE_MEMORY_LINE):
        print(f"  memory {hit.process}: {hit.match.group(1)[:200]}", flush=True)
    if shutil.which("nvidia-smi"):
        query = ["nvidia-smi", "--query-gpu=index,memory.used,memory.total", "--format=csv,noheader"]
        used = subprocess.run(query, capture_output=True, text=True, check=False).stdout.strip()
        print(f"  nvidia-smi (index, used, total): {'; '.join(used.splitlines())}", flush=True)
