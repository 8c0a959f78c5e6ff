"""What a Ray 2.58 cluster serving an app does when its head dies and comes back, measured on CPU with the real Ray.

    ./.venv-test/bin/python -m lab.head_restart_cpu --out lab/records/head-restart/DATE/head-restart-cpu.json

(ray[serve]==2.58.0 from requirements-test.txt and Debian's `redis-server` on PATH; no GPU, no vLLM, no KubeRay.)
Two nodes on this machine, each a `ray start --block` process in its own session, as KubeRay runs one in each pod
(kuberay v1.4.0 ray-operator/controllers/ray/common/pod.go setMissingRayStartParams, `block`): the head with
`--num-cpus 0` as the stack's head (infra/serving/rayservice.py), its GCS, dashboard and the Serve controller; a
worker with the stand-in app's replicas (lab/serve_update_app.py) and a Serve proxy of its own
(`proxy_location: EveryNode`, on a port of its own: RAY_SERVE_WORKER_PROXY_HTTP_PORT, ray/serve/_private/proxy.py
apply_per_node_port_overrides, since both proxies share this machine). The GCS's store is the scenario's: Redis, as
KubeRay's `gcsFaultToleranceOptions` start the head (RAY_REDIS_ADDRESS, `--redis-password` and
RAY_external_storage_namespace: pod.go configureGCSFaultTolerance) against a redis-server with a password on a free
port (with `--tls`, TLS only: `rediss://localhost:PORT`, a certificate from a throwaway CA the head trusts by
RAY_REDIS_CA_CERT, lab/redis_tls.py); RocksDB, as KubeRay 1.7.0's `backend: rocksdb` (RAY_gcs_storage,
RAY_gcs_storage_path: configureEmbeddedFT) on a folder kept across restarts; or memory (no FT).

A client GETs the app through the worker's proxy every `--interval` s. The head's processes are then SIGKILLed all
at once (its `ray start` and every process under it: GCS, raylet, dashboard, the Serve controller), as a pod's
death ends them, and the head is started again with the same command after the scenario's `down_s`. What a
kubelet and KubeRay would do meanwhile is played too: a worker whose `ray start` exits is started again after
`--worker-restart-delay` s (a container's restart; the kubelet's back-off starts at 10 s:
https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#container-restarts), and once the new head's
dashboard answers with no application, the config is PUT again (KubeRay 1.4.0 rayservice_controller.go
checkIfNeedSubmitServeApplications: "the head Pod crashed and GCS FT was not enabled"). Recorded: every request,
the events (kill, restart, the worker's raylet exit, re-PUT, app RUNNING), KubeRay's readiness probe of the worker,
the replicas' actor IDs and PIDs before and after, the worker raylet's and the new GCS's log lines about the restart,
and for Redis what KubeRay's cleanup Job command leaves of the run's keys.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import ray

from infra.serving.rollout_status import READY
from lab.redis_tls import TLS_HOST, TlsFiles, redis_tls_arguments, tls_files
from lab.serve_update_cpu import APP, IMPORT_PATH, free_port, get_once
from lab.smoke.deploy import http_request
from lab.smoke.update import judge
from lab.traffic import Answer, Traffic, longest_gap, longest_outage
from tools.project import PROJECT_DIR

RAY = Path(sys.executable).with_name("ray")
# KubeRay's default for a worker when GCS FT is on (kuberay v1.4.0 ray-operator/controllers/ray/utils/constant.go
# DefaultWorkerRayGcsReconnectTimeoutS, set by common/pod.go configureGCSFaultTolerance).
KUBERAY_FT_WORKER_TIMEOUT_S = 600
RECONNECT_TIMEOUT_ENV = "RAY_gcs_rpc_server_reconnect_timeout_s"
# What KubeRay sets on the head and the workers of a RayService's cluster "to improve service SLA" (kuberay v1.4.0
# and v1.7.0 ray-operator/controllers/ray/common/pod.go setContainerEnvVars, creatorCRDType RayServiceCRD).
RAYSERVICE_ENV = {
    "RAY_timeout_ms_task_wait_for_death_info": "0",
    "RAY_gcs_server_request_timeout_seconds": "5",
    "RAY_SERVE_KV_TIMEOUT_S": "5",
}
REDIS_PASSWORD = "head-restart-cpu"
OBJECT_STORE_BYTES = 100 * 1024 * 1024
POLL_S = 0.5
# KubeRay's probe gives each GET 2 s and runs every 5 s (utils/constant.go DefaultReadinessProbeTimeoutSeconds,
# DefaultReadinessProbePeriodSeconds); here every second, to place a failure closer.
PROBE_TIMEOUT_S = 2.0
PROBE_INTERVAL_S = 1.0
# The worker raylet's log lines that say what it did about the GCS, and the new GCS's about its start and the old
# head node.
RAYLET_GCS_LOG = re.compile(r"GCS|gcs_client|reconnect|terminat|exit|dead|cluster ID", re.I)
HEAD_GCS_LOG = re.compile(
    r"GCS storage type|external Redis|Finished loading|server started, listening|Health check failed|death reason|"
    r"Registering new node|[Rr]estart"
)
# A line of the stack trace Ray's C++ code prints under a failed check: kept out of a record's output.
STACK_FRAME = re.compile(r"^(/|\*\*\* StackTrace)")
LOG_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})")


REDIS, ROCKSDB, MEMORY = "redis", "rocksdb", "memory"
# The Python command of KubeRay's Redis cleanup Job, which it runs once a deleted RayCluster's head is gone, with the
# head container's env (RAY_REDIS_ADDRESS, REDIS_PASSWORD, RAY_external_storage_namespace) (kuberay v1.4.0 and
# v1.7.0 ray-operator/controllers/ray/raycluster_controller.go buildRedisCleanupJob, without a username).
KUBERAY_REDIS_CLEANUP = (
    "from ray._private.gcs_utils import cleanup_redis_storage; from urllib.parse import urlparse; import os; "
    "import sys; redis_address = os.getenv('RAY_REDIS_ADDRESS', '').split(',')[0]; "
    "redis_address = redis_address if '://' in redis_address else 'redis://' + redis_address; "
    "parsed = urlparse(redis_address); "
    "sys.exit(1) if not cleanup_redis_storage(host=parsed.hostname, port=parsed.port, "
    "password=os.getenv('REDIS_PASSWORD', parsed.password or ''), use_ssl=parsed.scheme=='rediss', "
    "storage_namespace=os.getenv('RAY_external_storage_namespace')) else None"
)


@dataclass(frozen=True)
class Scenario:
    name: str
    backend: str  # where the head's GCS keeps its tables: REDIS (external), ROCKSDB (a folder kept across restarts),
    # MEMORY (no fault tolerance)
    down_s: float  # how long the head stays away
    worker_reconnect_timeout_s: int | None  # RAY_gcs_rpc_server_reconnect_timeout_s on the worker; None: Ray's own
    what: str
    worker_env: tuple[tuple[str, str], ...] = ()  # more of the worker's RAY_ variables (the test shortens a check)

    @property
    def fault_tolerant(self) -> bool:
        return self.backend != MEMORY


SCENARIOS = {
    "ft-10s": Scenario(
        "ft-10s",
        REDIS,
        10.0,
        KUBERAY_FT_WORKER_TIMEOUT_S,
        "GCS FT on Redis; the head back after 10 s, the worker's reconnect timeout as KubeRay sets it (600 s)",
    ),
    "rocksdb-10s": Scenario(
        "rocksdb-10s",
        ROCKSDB,
        10.0,
        KUBERAY_FT_WORKER_TIMEOUT_S,
        "GCS FT on Ray's embedded RocksDB (KubeRay 1.7.0's backend: rocksdb), its folder kept across the restart as a"
        " PVC is; the head back after 10 s, the worker's timeout as KubeRay sets it (600 s)",
    ),
    "ft-beyond-timeout": Scenario(
        "ft-beyond-timeout",
        REDIS,
        30.0,
        15,
        "GCS FT on Redis; the head away 30 s, longer than the worker's reconnect timeout (set to 15 s)",
    ),
    "ft-default-timeout": Scenario(
        "ft-default-timeout",
        REDIS,
        75.0,
        None,
        "GCS FT on Redis; the head away 75 s, the worker with Ray's own reconnect timeout (no variable set)",
    ),
    "no-ft-10s": Scenario(
        "no-ft-10s",
        MEMORY,
        10.0,
        None,
        "no GCS FT (the GCS's tables in its memory); the head back after 10 s, as KubeRay runs it without FT",
    ),
}


@dataclass(frozen=True)
class Settings:
    load_s: float  # each side's constructor: the engine load
    ingress_load_s: float
    interval_s: float
    timeout_s: float
    before_s: float  # traffic before the kill
    recover_timeout_s: float  # after the head's restart, the longest wait for the app to answer again
    settle_s: float
    worker_restart_delay_s: float
    stop_at_worker_exit: bool = False  # end the run when the worker's raylet exits (the test's no-FT case)
    redis_tls: bool = False  # the Redis scenarios' server speaks TLS only


@dataclass(frozen=True)
class Ports:
    redis: int
    gcs: int
    dashboard: int
    head_serve: int
    worker_serve: int
    head_agent: int
    worker_agent: int
    client_server: int

    @classmethod
    def free(cls) -> Ports:
        return cls(*(free_port() for _ in range(8)))


def process_tree(root: int) -> list[int]:
    """`root` and every process under it, read from /proc (Ray starts its workers in process groups of their own,
    so the head's group alone would leave the Serve controller running: ray_config_def.h
    process_group_cleanup_enabled)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(child for child, parent in parents.items() if parent == pid)
    return tree


def running(pid: int) -> bool:
    """Whether `pid` is a live process (not gone, not a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class Node:
    """One `ray start --block` (a pod's Ray container), in a session of its own; started again with the same
    command after a kill."""

    def __init__(self, name: str, command: list[str], extra_env: dict[str, str], temp_dir: Path, log: Path) -> None:
        self.name, self.command, self.temp_dir, self.log = name, command, temp_dir, log
        self.extra_env = {**RAYSERVICE_ENV, **extra_env}  # the RAY_ variables it runs with, for the record
        self.env = node_env(extra_env)
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        # `ray start --head` refuses a port that the last cluster started from this temp dir had, while a process on
        # this machine names it in `--gcs-address` (ray/scripts/scripts.py start, services.find_gcs_addresses): the
        # worker's raylet does. A pod is a machine of its own, so the new head would not see it; forget the address.
        (self.temp_dir / "ray_current_cluster").unlink(missing_ok=True)
        with self.log.open("a") as log:
            log.write(f"\n=== {self.name} start {self.starts + 1}: {' '.join(self.command)}\n")
            log.flush()
            self.process = subprocess.Popen(
                self.command,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.starts += 1

    def exited(self) -> int | None:
        """The `ray start`'s exit status once it has exited, else None."""
        return None if self.process is None else self.process.poll()

    def raylet_pid(self) -> int | None:
        if self.process is None or self.exited() is not None:
            return None
        return next((pid for pid in process_tree(self.process.pid) if "/raylet/raylet " in command_line(pid)), None)

    def kill(self) -> int:
        """SIGKILL the `ray start` and every process under it at once; wait until they are gone. How many there were."""
        if self.process is None or self.process.poll() is not None:
            # Never started, or exited and reaped: its pid may be another process's by now.
            return 0
        pids = [pid for pid in process_tree(self.process.pid) if running(pid)]
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait()
        deadline = time.monotonic() + 30
        while any(running(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        return len(pids)


@dataclass(frozen=True)
class Redis:
    """A running redis-server as its clients reach it: on 127.0.0.1, or over TLS at the name its certificate is for."""

    port: int
    tls: TlsFiles | None = None

    @property
    def address(self) -> str:
        """RAY_REDIS_ADDRESS; the `rediss` scheme turns TLS on (ray/_private/services.py get_address)."""
        return f"rediss://{TLS_HOST}:{self.port}" if self.tls else f"127.0.0.1:{self.port}"

    def client_env(self) -> dict[str, str]:
        """What the head and KubeRay's cleanup Job read to reach it: the address and, over TLS, the CA to trust
        (RAY_REDIS_CA_CERT: without it Ray 2.58 checks the certificate against the system store, which does not hold
        the throwaway CA; docs/head-fault-tolerance.md)."""
        return {"RAY_REDIS_ADDRESS": self.address, **({"RAY_REDIS_CA_CERT": str(self.tls.ca)} if self.tls else {})}

    def cli(self, *command: str) -> list[str]:
        tls = ["--tls", "--cacert", str(self.tls.ca), "-h", TLS_HOST] if self.tls else []
        return ["redis-cli", *tls, "-p", str(self.port), "-a", REDIS_PASSWORD, "--no-auth-warning", *command]


@contextmanager
def redis_server(port: int, work: Path, tls: TlsFiles | None = None) -> Iterator[Redis]:
    """Debian's redis-server on `port` with a password, nothing saved to disk, TLS only when `tls` is given; stopped
    after."""
    server = shutil.which("redis-server")
    if server is None:
        raise RuntimeError("redis-server is not on PATH: apt-get install -y redis-server (or ./setup.sh redis)")
    log = (work / "redis.log").open("w")
    listen = redis_tls_arguments(tls, port) if tls else ["--port", str(port)]
    command = [server, *listen, "--bind", "127.0.0.1", "--requirepass", REDIS_PASSWORD]
    command += ["--save", "", "--appendonly", "no", "--dir", str(work)]
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while "Ready to accept connections" not in (work / "redis.log").read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start: {(work / 'redis.log').read_text()[-500:]}")
            time.sleep(0.1)
        yield Redis(port, tls)
    finally:
        process.kill()
        process.wait()
        log.close()


def node_env(extra: dict[str, str]) -> dict[str, str]:
    """This process's environment less its RAY_ variables, with what KubeRay sets on every pod of a RayService's
    cluster (RAYSERVICE_ENV) and `extra`."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_")}
    pythonpath = os.pathsep.join(filter(None, [str(PROJECT_DIR), os.environ.get("PYTHONPATH")]))
    return {**env, "PYTHONPATH": pythonpath, "RAY_USAGE_STATS_ENABLED": "0", **RAYSERVICE_ENV, **extra}


def head_node(scenario: Scenario, ports: Ports, work: Path, redis: Redis | None) -> Node:
    command = [str(RAY), "start", "--head", "--block", f"--port={ports.gcs}", "--num-cpus=0"]
    command += ["--num-gpus=0", "--include-dashboard=true", "--dashboard-host=127.0.0.1"]
    command += [f"--dashboard-port={ports.dashboard}", f"--dashboard-agent-listen-port={ports.head_agent}"]
    command += [f"--ray-client-server-port={ports.client_server}", f"--object-store-memory={OBJECT_STORE_BYTES}"]
    command += [f"--temp-dir={work / 'head'}", "--disable-usage-stats"]
    extra: dict[str, str] = {}
    if redis is not None:
        # KubeRay's gcsFaultToleranceOptions (pod.go configureGCSFaultTolerance): the address, the password as
        # `--redis-password $REDIS_PASSWORD`, and the namespace (the RayCluster's UID unless one is given).
        command.append(f"--redis-password={REDIS_PASSWORD}")
        extra = {**redis.client_env(), "RAY_external_storage_namespace": scenario.name}
    if scenario.backend == ROCKSDB:
        # KubeRay 1.7.0's `backend: rocksdb` (common/pod.go configureEmbeddedFT): RAY_gcs_storage=rocksdb and
        # RAY_gcs_storage_path at the PVC's mount (/data/gcs there; a folder of the run here, kept across restarts).
        extra = {"RAY_gcs_storage": ROCKSDB, "RAY_gcs_storage_path": str(work / "gcs-storage")}
    return Node("head", command, extra, work / "head", work / "head.log")


def worker_node(scenario: Scenario, ports: Ports, work: Path) -> Node:
    command = [str(RAY), "start", "--block", f"--address=127.0.0.1:{ports.gcs}", "--num-cpus=1"]
    command += ["--num-gpus=0", f"--dashboard-agent-listen-port={ports.worker_agent}"]
    command += [f"--object-store-memory={OBJECT_STORE_BYTES}", f"--temp-dir={work / 'worker'}", "--disable-usage-stats"]
    extra = {"RAY_SERVE_WORKER_PROXY_HTTP_PORT": str(ports.worker_serve)}
    if scenario.worker_reconnect_timeout_s is not None:
        extra[RECONNECT_TIMEOUT_ENV] = str(scenario.worker_reconnect_timeout_s)
    extra.update(scenario.worker_env)
    return Node("worker", command, extra, work / "worker", work / "worker.log")


def serve_config(ports: Ports, settings: Settings) -> dict[str, Any]:
    """The stand-in app, one replica a side and one ingress, with a proxy on every node that has a replica."""
    args = {
        "replicas": 1,
        "ingress_replicas": 1,
        "label": "v1",
        "ingress_load_s": settings.ingress_load_s,
        "prefill": {"arg": "v1", "load_s": settings.load_s},
        "decode": {"arg": "v1", "load_s": settings.load_s},
    }
    application = {"name": APP, "import_path": IMPORT_PATH, "route_prefix": "/", "args": args}
    return {
        "proxy_location": "EveryNode",
        "http_options": {"host": "127.0.0.1", "port": ports.head_serve},
        "applications": [application],
    }


def port_open(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def serve_details(dashboard: str) -> dict[str, Any] | None:
    code, text = http_request("GET", f"{dashboard}/api/serve/applications/", timeout=5)
    return json.loads(text) if code == 200 else None


def alive_nodes(dashboard: str) -> list[dict[str, Any]]:
    code, text = http_request("GET", f"{dashboard}/api/v0/nodes?limit=100", timeout=5)
    if code != 200:
        return []
    nodes: list[dict[str, Any]] = json.loads(text)["data"]["result"]["result"]
    return [node for node in nodes if node.get("state") == "ALIVE"]


def wait(what: str, check: Any, timeout_s: float) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (value := check()):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not after {timeout_s:.0f} s")
        time.sleep(POLL_S)
    return value


def replicas(details: dict[str, Any] | None) -> dict[str, list[dict[str, Any]]]:
    """Each deployment's replicas: id, actor id, pid, node and state."""
    app = ((details or {}).get("applications") or {}).get(APP) or {}
    keys = ("replica_id", "actor_id", "pid", "node_id", "state")
    return {
        name: sorted(({key: replica.get(key) for key in keys} for replica in deployment.get("replicas", [])), key=str)
        for name, deployment in sorted((app.get("deployments") or {}).items())
    }


def proxies(details: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    keys = ("actor_id", "worker_id", "status")
    return {
        node: {key: proxy.get(key) for key in keys} for node, proxy in ((details or {}).get("proxies") or {}).items()
    }


def app_status(details: dict[str, Any] | None) -> str:
    app = ((details or {}).get("applications") or {}).get(APP) or {}
    return str(app.get("status", "")) if details is not None else ""


def log_lines(paths: list[Path], pattern: re.Pattern[str], kill_wall: float) -> list[str]:
    """The lines of Ray's C++ logs in `paths` that match `pattern`, from the kill on, each stamped with seconds after
    the kill; a line repeated in a row is kept once with its count (the raylet logs a broken connection every 2 s)."""
    kept: list[tuple[str, str, int]] = []
    stamped = []
    for path in paths:
        for line in path.read_text(errors="replace").splitlines():
            stamp = LOG_LINE.match(line)
            if stamp is None or not pattern.search(line):
                continue
            wall = datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            if wall >= kill_wall - 1:
                stamped.append((wall, line.split(") ", 1)[-1][:240]))
    for wall, message in sorted(stamped):
        if kept and kept[-1][1] == message:
            kept[-1] = (kept[-1][0], message, kept[-1][2] + 1)
        else:
            kept.append((f"+{wall - kill_wall:.1f}s", message, 1))
    return [f"{at} {message}" + (f" (x{count})" if count > 1 else "") for at, message, count in kept][:60]


@dataclass
class Run:
    """What one scenario saw. Event times are seconds after the kill; traffic times, after the traffic began."""

    scenario: Scenario
    settings: Settings
    start: float = 0.0  # time.monotonic() when the traffic began
    kill_at: float = 0.0  # time.monotonic() at the kill
    kill_wall: float = 0.0
    end_s: float = 0.0
    events: list[dict[str, Any]] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)
    probes: list[Answer] = field(default_factory=list)
    before: dict[str, Any] | None = None  # the dashboard's Serve details
    after: dict[str, Any] | None = None
    raylet_before: int | None = None
    raylet_after: int | None = None
    worker_node_id: str = ""
    redis_cleanup: dict[str, Any] = field(default_factory=dict)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)  # each node's command and RAY_ variables
    worker_log: list[str] = field(default_factory=list)
    head_log: list[str] = field(default_factory=list)

    def event(self, what: str, **facts: Any) -> None:
        entry = {"t_s": round(time.monotonic() - self.kill_at, 2), "event": what, **facts}
        self.events.append(entry)
        print(f"    [{entry['t_s']:7.2f}s] {what}{' ' + json.dumps(facts) if facts else ''}", flush=True)

    def first(self, what: str) -> float | None:
        return next((e["t_s"] for e in self.events if e["event"] == what), None)


RECOVERED = "app RUNNING and answering after the restart"
PUT_AGAIN = "config PUT again (as KubeRay does when no app is found)"


def readiness_probe(agent: str, proxy: str, timeout_s: float) -> tuple[bool, str, str]:
    """KubeRay's readiness probe of a RayService's worker pod: the dashboard agent's raylet check, then the Serve
    proxy's health, each a GET whose body must say "success" (kuberay v1.4.0 ray-operator/controllers/ray/common/pod.go
    initLivenessAndReadinessProbe; utils/constant.go BaseWgetHealthCommand, RayAgentRayletHealthPath,
    RayServeProxyHealthPath); `served` names the check that failed."""
    for name, url in (("raylet", f"{agent}/api/local_raylet_healthz"), ("proxy", f"{proxy}/-/healthz")):
        code, text = http_request("GET", url, timeout=timeout_s)
        if code != 200 or "success" not in text:
            return False, name, f"{name} {code}: {text[-160:]}"
    return True, "", ""


def start_cluster(
    scenario: Scenario, ports: Ports, work: Path, settings: Settings, stack: ExitStack, redis: Redis | None
) -> tuple[Node, Node]:
    """The head, then the worker once the head's dashboard answers; both nodes alive; the app RUNNING and answering
    through the worker's proxy."""
    head, worker = head_node(scenario, ports, work, redis), worker_node(scenario, ports, work)
    stack.callback(head.kill)
    stack.callback(worker.kill)
    dashboard = f"http://127.0.0.1:{ports.dashboard}"
    head.start()
    wait("the head's dashboard", lambda: serve_details(dashboard) is not None, 120)
    worker.start()
    wait("two nodes alive", lambda: len(alive_nodes(dashboard)) == 2, 120)
    config = serve_config(ports, settings)
    code, text = http_request("PUT", f"{dashboard}/api/serve/applications/", config, timeout=60)
    if code != 200:
        raise RuntimeError(f"the config PUT was refused ({code}): {text[:300]}")
    wait("the app RUNNING", lambda: judge(serve_details(dashboard), config["applications"])[0].state == READY, 180)
    url = f"http://127.0.0.1:{ports.worker_serve}/"
    wait("an answer through the worker's proxy", lambda: get_once(url, settings.timeout_s)[0], 60)
    return head, worker


def run_scenario(scenario: Scenario, settings: Settings, work: Path) -> Run:
    """Start the cluster, kill the head under traffic, restart it after `down_s`, and record what happened."""
    ports = Ports.free()
    dashboard = f"http://127.0.0.1:{ports.dashboard}"
    proxy = f"http://127.0.0.1:{ports.worker_serve}"
    run = Run(scenario, settings)
    print(f"== {scenario.name}: {scenario.what}", flush=True)
    with ExitStack() as stack:
        redis = None
        if scenario.backend == REDIS:
            tls = tls_files(work / "tls") if settings.redis_tls else None
            redis = stack.enter_context(redis_server(ports.redis, work, tls))
        head, worker = start_cluster(scenario, ports, work, settings, stack, redis)
        run.before = serve_details(dashboard)
        run.nodes = {node.name: {"command": node.command, "env": node.extra_env} for node in (head, worker)}
        run.worker_node_id = next(node["node_id"] for node in alive_nodes(dashboard) if not node.get("is_head_node"))
        run.raylet_before = worker.raylet_pid()
        print(f"  running: worker node {run.worker_node_id[:12]}, raylet pid {run.raylet_before}", flush=True)
        probe = functools.partial(readiness_probe, f"http://127.0.0.1:{ports.worker_agent}", proxy, PROBE_TIMEOUT_S)
        run.start = time.monotonic()
        request = functools.partial(get_once, f"{proxy}/", settings.timeout_s)
        with (
            Traffic(request, run.start, settings.interval_s, name="head-restart-traffic") as traffic,
            Traffic(probe, run.start, PROBE_INTERVAL_S, name="head-restart-probe") as probes,
        ):
            time.sleep(settings.before_s)
            run.kill_at, run.kill_wall = time.monotonic(), time.time()
            run.event("head killed", processes=head.kill())
            follow(run, head, worker, ports, traffic)
            run.end_s = round(time.monotonic() - run.start, 2)
        run.answers, run.probes = list(traffic.answers), list(probes.answers)
        run.after = serve_details(dashboard)
        run.raylet_after = worker.raylet_pid()
        raylet_logs = sorted((work / "worker").glob("session_2*/logs/raylet*.out"))
        run.worker_log = log_lines(raylet_logs, RAYLET_GCS_LOG, run.kill_wall)
        gcs_logs = sorted((work / "head").glob("session_2*/logs/gcs_server*.out"))
        run.head_log = log_lines(gcs_logs, HEAD_GCS_LOG, run.kill_wall)
        if redis is not None:
            worker.kill()
            head.kill()
            run.redis_cleanup = redis_cleanup(redis, scenario.name)
    return run


def redis_keys(redis: Redis, namespace: str) -> int:
    """How many keys the cluster of `namespace` has in Redis: the GCS names each of its tables' keys
    `RAY<namespace>@<table>` (ray-project/ray src/ray/gcs/store_client/redis_store_client.cc RedisKey::ToString)."""
    answer = subprocess.run(redis.cli("--scan", "--pattern", f"RAY{namespace}@*"), capture_output=True, text=True)
    answer.check_returncode()
    return len(answer.stdout.split())


def redis_cleanup(redis: Redis, namespace: str, leave_out: tuple[str, ...] = ()) -> dict[str, Any]:
    """KubeRay's cleanup Job's command against the run's Redis once the head is gone, as on a RayCluster's delete, with
    the head container's Redis env (the Job is a copy of the head pod: buildRedisCleanupJob) less the variables named
    in `leave_out`: the keys in Redis before and after, and its exit status."""
    before = redis_keys(redis, namespace)
    job_env = {**redis.client_env(), "REDIS_PASSWORD": REDIS_PASSWORD, "RAY_external_storage_namespace": namespace}
    job = subprocess.run(
        [sys.executable, "-c", KUBERAY_REDIS_CLEANUP],
        env=node_env({name: value for name, value in job_env.items() if name not in leave_out}),
        capture_output=True,
        text=True,
    )
    return {
        "keys_before": before,
        "exit_status": job.returncode,
        "keys_after": redis_keys(redis, namespace),
        "output": "\n".join(line for line in job.stderr.splitlines() if not STACK_FRAME.match(line))[-600:],
    }


def follow(run: Run, head: Node, worker: Node, ports: Ports, traffic: Traffic) -> None:
    """From the kill until the app answers again (then `settle_s` more) or `recover_timeout_s` after the restart:
    restart the head after `down_s`, a worker whose `ray start` exited after `worker_restart_delay_s`, PUT the config
    again where the new head has no app, and record each change."""
    settings, dashboard = run.settings, f"http://127.0.0.1:{ports.dashboard}"
    config = serve_config(ports, settings)
    raylet_pid, restart_due = run.raylet_before, run.kill_at + run.scenario.down_s
    head_back = put_again = False
    worker_exited_at: float | None = None
    recovered_at: float | None = None
    last_seen: dict[str, Any] = {}
    while True:
        now = time.monotonic()
        if not head_back and now >= restart_due:
            head.start()
            head_back = True
            run.event("head started again")
        if raylet_pid is not None and not running(raylet_pid):
            run.event("worker raylet exited", pid=raylet_pid)
            raylet_pid = None
            if settings.stop_at_worker_exit:
                return
        if (code := worker.exited()) is not None and worker_exited_at is None:
            worker_exited_at = now
            run.event("worker ray start exited", code=code)
        if worker_exited_at is not None and now - worker_exited_at >= settings.worker_restart_delay_s:
            worker.start()
            worker_exited_at = None
            run.event("worker started again (the container's restart)")
        if raylet_pid is None and worker.exited() is None and (new := worker.raylet_pid()) is not None:
            raylet_pid = new
            run.event("worker raylet running", pid=new)
        details = serve_details(dashboard) if head_back else None
        seen = {
            "gcs_port": head_back and port_open(ports.gcs),
            "dashboard": head_back and http_request("GET", f"{dashboard}/api/version", timeout=2)[0] == 200,
            "serve_details": details is not None,
            "app": app_status(details),
            "worker_raylet": raylet_pid is not None,
        }
        if seen != last_seen:
            run.event("poll", **seen)
            last_seen = seen
        if details is not None and not (details.get("applications") or {}).get(APP) and not put_again:
            code, _ = http_request("PUT", f"{dashboard}/api/serve/applications/", config, timeout=60)
            put_again = True
            run.event(PUT_AGAIN, status=code)
        ready = details is not None and judge(details, config["applications"])[0].state == READY
        answered = any(a.ok and run.start + a.t_s > restart_due for a in traffic.answers)
        if ready and answered and recovered_at is None:
            recovered_at = now
            run.event(RECOVERED)
        if recovered_at is not None and now - recovered_at >= settings.settle_s:
            return
        if head_back and now - restart_due > settings.recover_timeout_s:
            run.event("gave up waiting for the app", timeout_s=settings.recover_timeout_s)
            return
        time.sleep(POLL_S)


def survived(before: dict[str, list[dict[str, Any]]], after: dict[str, list[dict[str, Any]]]) -> bool:
    """Every replica of before is in after with the same actor ID and PID, and every replica of after RUNNING."""
    keep = ("actor_id", "pid")
    return bool(before) and all(
        {tuple(r[k] for k in keep) for r in replicas_} <= {tuple(r[k] for k in keep) for r in after.get(name, [])}
        and all(r["state"] == "RUNNING" for r in after.get(name, []))
        for name, replicas_ in before.items()
    )


def failures(answers: list[Answer], kill_s: float, restart_s: float) -> dict[str, Any]:
    failed = [a for a in answers if not a.ok]
    return {
        "sent": len(answers),
        "failed": len(failed),
        "failed_while_head_away": sum(kill_s <= a.t_s < restart_s for a in failed),
        "failed_after_restart": sum(a.t_s >= restart_s for a in failed),
        "first_failure_after_kill_s": next((round(a.t_s - kill_s, 2) for a in failed if a.t_s >= kill_s), None),
        "errors": sorted({a.error[:160] for a in failed})[:6],
    }


def summary(run: Run) -> dict[str, Any]:
    """The record of one scenario: the figures first, then the raw answers and events."""
    kill_s = round(run.kill_at - run.start, 2)
    restart_s = round(kill_s + run.scenario.down_s, 2)
    outage, still_failing = longest_outage(run.answers, run.end_s)
    replicas_before, replicas_after = replicas(run.before), replicas(run.after)
    begin = run.answers[0].t_s if run.answers else 0.0
    return {
        "scenario": asdict(run.scenario),
        "redis_tls": run.scenario.backend == REDIS and run.settings.redis_tls,
        "kill_at_s": kill_s,  # on the traffic's clock: seconds after the traffic began
        "restart_at_s": restart_s,
        "end_s": run.end_s,
        "requests": failures(run.answers, kill_s, restart_s),
        "longest_outage_s": round(outage, 2),
        "still_failing_at_end": still_failing,
        "longest_gap_s": round(longest_gap(run.answers, run.end_s, begin_s=begin), 2),
        "readiness_probes": failures(run.probes, kill_s, restart_s),
        "app_status_before": app_status(run.before),
        "app_status_after": app_status(run.after),
        "worker_node_id": run.worker_node_id,
        "worker_raylet_pid_before": run.raylet_before,
        "worker_raylet_pid_after": run.raylet_after,
        "worker_raylet_survived": run.raylet_before is not None and run.raylet_before == run.raylet_after,
        "worker_raylet_exited_at_s": run.first("worker raylet exited"),
        "config_put_again_at_s": run.first(PUT_AGAIN),
        "recovered_at_s": run.first(RECOVERED),
        "replicas_before": replicas_before,
        "replicas_after": replicas_after,
        "replicas_survived": survived(replicas_before, replicas_after),
        "proxies_before": proxies(run.before),
        "proxies_after": proxies(run.after),
        "nodes": run.nodes,
        "redis_cleanup": run.redis_cleanup,
        "worker_raylet_gcs_log": run.worker_log,
        "head_gcs_log": run.head_log,
        "events": run.events,
        "answers": [asdict(a) for a in run.answers],
        "probes": [asdict(a) for a in run.probes],
    }


def table(runs: list[dict[str, Any]]) -> str:
    """The markdown table docs/head-fault-tolerance.md shows."""
    rows = [
        "| scenario | head away | requests sent / failed (while away / after restart) "
        "| longest gap without an answer | worker readiness probe failed | worker raylet "
        "| replicas (actor IDs, PIDs) | app after | app RUNNING again |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        requests, probes = r["requests"], r["readiness_probes"]
        raylet = "same process" if r["worker_raylet_survived"] else f"exited {r['worker_raylet_exited_at_s']} s after"
        recovered = "-" if r["recovered_at_s"] is None else f"{r['recovered_at_s']} s after the kill"
        name = r["scenario"]["name"] + (" (TLS)" if r["redis_tls"] else "")
        rows.append(
            f"| {name} | {r['scenario']['down_s']:g} s | {requests['sent']} / {requests['failed']} "
            f"({requests['failed_while_head_away']} / {requests['failed_after_restart']}) | {r['longest_gap_s']} s | "
            f"{probes['failed']} of {probes['sent']} | {raylet} | {'same' if r['replicas_survived'] else 'replaced'} | "
            f"`{r['app_status_after']}` | {recovered} |"
        )
    return "\n".join(rows)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="the JSON record")
    parser.add_argument("--scenarios", nargs="+", choices=list(SCENARIOS), default=list(SCENARIOS))
    parser.add_argument("--load-s", type=float, default=10.0, help="each side's constructor time (engine load)")
    parser.add_argument("--ingress-load-s", type=float, default=2.0, help="the ingress constructor's time")
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between requests")
    parser.add_argument("--timeout", type=float, default=2.0, help="each request's timeout")
    parser.add_argument("--before", type=float, default=3.0, help="seconds of traffic before the kill")
    parser.add_argument("--recover-timeout", type=float, default=180.0, help="the longest wait after the restart")
    parser.add_argument("--settle", type=float, default=5.0, help="traffic after the app answers again")
    parser.add_argument("--worker-restart-delay", type=float, default=10.0, help="a container's restart delay")
    parser.add_argument("--tls", action="store_true", help="the Redis scenarios' server speaks TLS only")
    parser.add_argument("--keep", type=Path, help="keep each scenario's logs and Ray sessions under this folder")
    return parser.parse_args(argv)


def settings_from(args: argparse.Namespace) -> Settings:
    return Settings(
        args.load_s,
        args.ingress_load_s,
        args.interval,
        args.timeout,
        args.before,
        args.recover_timeout,
        args.settle,
        args.worker_restart_delay,
        redis_tls=args.tls,
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = settings_from(args)
    started, load_at_start = time.monotonic(), os.getloadavg()
    runs = []
    for name in args.scenarios:
        with tempfile.TemporaryDirectory(prefix="headft", dir="/tmp") as temp:
            work = Path(temp) if args.keep is None else args.keep / name
            work.mkdir(parents=True, exist_ok=True)
            runs.append(summary(run_scenario(SCENARIOS[name], settings, work)))
    redis = shutil.which("redis-server")
    redis_version = subprocess.run([redis, "--version"], capture_output=True, text=True).stdout if redis else ""
    record = {
        "command": ["python", "-m", "lab.head_restart_cpu", *(argv if argv is not None else sys.argv[1:])],
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_at_start_and_end": [load_at_start, os.getloadavg()],
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "versions": {"ray": ray.__version__, "ray_commit": ray.__commit__, "redis_server": redis_version.strip()},
        "settings": asdict(settings),
        "wall_s": round(time.monotonic() - started, 1),
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(table(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
