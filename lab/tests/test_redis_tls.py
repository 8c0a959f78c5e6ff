"""Ray 2.58's GCS on a Redis that speaks TLS only, with a password, as the stack's ElastiCache for Valkey will
(docs/head-fault-tolerance.md, "Redis over TLS, measured"): what the head needs to trust the server, what it checks,
and that a head restart and KubeRay's cleanup Job work over TLS.

Real processes: Debian's redis-server (built with TLS) with a certificate signed by a throwaway CA that no system trust
store holds (lab/redis_tls.py), and heads started as KubeRay starts one with `gcsFaultToleranceOptions`: `ray start
--head --block --redis-password` with RAY_REDIS_ADDRESS=rediss://... (kuberay v1.4.0 ray-operator/controllers/ray/
common/pod.go configureGCSFaultTolerance; lab/head_restart_cpu.py). Each head counts as up once its GCS listens, which
it does only after connecting to Redis and loading its tables (gcs_server.out: "GcsServer server started, listening").
`ray start` itself connects first (ray/_private/node.py check_persisted_session_name, through _raylet.so), then the GCS
(core/src/ray/gcs/gcs_server); both through hiredis' TLS over the BoringSSL linked into them (`strings`:
external/boringssl, redisCreateSSLContextWithOptions), so a failed check stops the head at once.
Without redis-server on PATH, or with one built without TLS, the module is skipped (./setup.sh redis installs
Debian's); under CI=true it fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lab.head_restart_cpu import RAY, REDIS_PASSWORD, STACK_FRAME, Node, Redis, redis_cleanup, redis_server
from lab.redis_tls import tls_files
from lab.serve_update_cpu import free_port

REDIS_MISSING = "" if shutil.which("redis-server") else "redis-server is not on PATH: ./setup.sh redis"
if REDIS_MISSING and os.environ.get("CI") == "true":
    raise RuntimeError(f"CI must run the Redis TLS tests: {REDIS_MISSING}")
GCS_UP = "GcsServer server started, listening on port"
START_TIMEOUT_S = 120.0
# Debian's and Ubuntu's bundle of the system's trusted CAs (ca-certificates' update-ca-certificates writes it).
SYSTEM_BUNDLE_NAME = "ca-certificates.crt"


@dataclass(frozen=True)
class HeadStart:
    up: bool  # the GCS listened: it connected to Redis and loaded its tables
    seconds: float
    log: str  # `ray start`'s output
    gcs_log: str

    def messages(self) -> str:
        """The end of `ray start`'s output without the stack traces of a failed check."""
        return "\n".join(line for line in self.log.splitlines() if not STACK_FRAME.match(line))[-800:]

    def cluster_id(self) -> str:
        return self.gcs_log.split("cluster_id=", 1)[1].split()[0]


def start_head(work: Path, redis_env: dict[str, str], namespace: str, wrap: tuple[str, ...] = ()) -> HeadStart:
    """A head as KubeRay starts one with GCS FT, in a folder of its own, until its GCS listens or `ray start` exits;
    then every process of it is killed."""
    work.mkdir(parents=True)
    command = [*wrap, str(RAY), "start", "--head", "--block", f"--port={free_port()}", "--num-cpus=0"]
    command += ["--include-dashboard=false", f"--ray-client-server-port={free_port()}", "--disable-usage-stats"]
    command += [f"--redis-password={REDIS_PASSWORD}", f"--temp-dir={work}"]
    env = {**redis_env, "RAY_external_storage_namespace": namespace}
    head = Node("head", command, env, work, work / "head.log")
    started = time.monotonic()
    head.start()
    try:
        while not (up := GCS_UP in gcs_log(work)) and head.exited() is None:
            if time.monotonic() - started > START_TIMEOUT_S:
                raise TimeoutError(f"no GCS and no exit after {START_TIMEOUT_S:.0f} s: {head.log.read_text()[-600:]}")
            time.sleep(0.1)
        return HeadStart(up, round(time.monotonic() - started, 1), head.log.read_text(), gcs_log(work))
    finally:
        head.kill()


def gcs_log(work: Path) -> str:
    return "".join(path.read_text(errors="replace") for path in work.glob("session_2*/logs/gcs_server.out"))


def in_private_etc_ssl_certs(folder: Path) -> tuple[str, ...]:
    """A command prefix that runs the command with `folder` mounted over /etc/ssl/certs in a mount namespace of its
    own, so nothing else on the machine sees it (unshare(1), mount(8); needs root)."""
    return ("unshare", "--mount", "sh", "-c", f'mount --bind {folder} /etc/ssl/certs && exec "$0" "$@"')


def private_mount_namespace_missing() -> str:
    if shutil.which("unshare") is None:
        return "no unshare(1) on PATH"
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True, text=True)
    return "" if probe.returncode == 0 else f"no private mount namespace here (root needed): {probe.stderr.strip()}"


@dataclass
class Lab:
    work: Path
    redis: Redis
    heads: dict[str, Any]  # each case's HeadStart, or for the restart a pair of them


def no_ca_variable(lab: Lab, work: Path) -> HeadStart:
    return start_head(work, {"RAY_REDIS_ADDRESS": lab.redis.address}, "no-ca-variable")


def ca_cert(lab: Lab, work: Path) -> HeadStart:
    return start_head(work, lab.redis.client_env(), "ca-cert")


def ssl_cert_file(lab: Lab, work: Path) -> HeadStart:
    """No Ray variable; the CA named by SSL_CERT_FILE, the file variable of OpenSSL's default lookup."""
    env = {"RAY_REDIS_ADDRESS": lab.redis.address, "SSL_CERT_FILE": str(lab.redis.tls.ca)}
    return start_head(work, env, "ssl-cert-file")


def other_name(lab: Lab, work: Path) -> HeadStart:
    """The server reached by its IP address, its certificate for `localhost`, and SNI asking for a third name."""
    env = {
        "RAY_REDIS_ADDRESS": f"rediss://127.0.0.1:{lab.redis.port}",
        "RAY_REDIS_CA_CERT": str(lab.redis.tls.ca),
        "RAY_REDIS_SERVER_NAME": "wrong.example",
    }
    return start_head(work, env, "other-name")


def missing_ca_file(lab: Lab, work: Path) -> HeadStart:
    env = {"RAY_REDIS_ADDRESS": lab.redis.address, "RAY_REDIS_CA_CERT": str(lab.work / "no-such-ca.crt")}
    return start_head(work, env, "missing-ca-file")


def restart(lab: Lab, work: Path) -> tuple[HeadStart, HeadStart]:
    """A head, killed once its GCS is up, and a second head started with the same env, as a restarted head pod."""
    first = start_head(work / "first", lab.redis.client_env(), "restart")
    return first, start_head(work / "second", lab.redis.client_env(), "restart")


def etc_ssl_certs_bundle_only(lab: Lab, work: Path) -> HeadStart | str:
    """No variable; /etc/ssl/certs of this head alone holding only a ca-certificates.crt with the throwaway CA in it
    (the file the stack's image would have), no hashed links."""
    certs = lab.work / "etc-ssl-certs-bundle-only"
    certs.mkdir()
    shutil.copy(lab.redis.tls.ca, certs / SYSTEM_BUNDLE_NAME)
    return head_with_etc_ssl_certs(certs, lab, work, "bundle-only")


def etc_ssl_certs_hashed(lab: Lab, work: Path) -> HeadStart | str:
    """No variable; /etc/ssl/certs of this head alone holding the throwaway CA under its subject-hash name
    (`openssl x509 -hash`, as update-ca-certificates links every CA there)."""
    certs = lab.work / "etc-ssl-certs-hashed"
    certs.mkdir()
    subject_hash = subprocess.run(
        ["openssl", "x509", "-hash", "-noout", "-in", str(lab.redis.tls.ca)], capture_output=True, text=True, check=True
    ).stdout.strip()
    shutil.copy(lab.redis.tls.ca, certs / f"{subject_hash}.0")
    return head_with_etc_ssl_certs(certs, lab, work, "hashed")


def head_with_etc_ssl_certs(certs: Path, lab: Lab, work: Path, namespace: str) -> HeadStart | str:
    """A head with no CA variable whose /etc/ssl/certs is `certs`; why not, where this machine cannot."""
    if missing := private_mount_namespace_missing():
        return missing
    return start_head(work, {"RAY_REDIS_ADDRESS": lab.redis.address}, namespace, wrap=in_private_etc_ssl_certs(certs))


HEAD_CASES = {
    "no-ca-variable": no_ca_variable,
    "ca-cert": ca_cert,
    "ssl-cert-file": ssl_cert_file,
    "other-name": other_name,
    "missing-ca-file": missing_ca_file,
    "restart": restart,
    "bundle-only": etc_ssl_certs_bundle_only,
    "hashed": etc_ssl_certs_hashed,
}


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    """A TLS-only redis-server with a password, and every head case run against it side by side, each in a folder and
    a namespace of its own; SSL_CERT_FILE and SSL_CERT_DIR kept from the heads unless a case sets them."""
    if REDIS_MISSING:
        pytest.skip(REDIS_MISSING)
    # Short: Ray's Unix sockets live in the session folder, and a socket's path has at most 107 bytes (unix(7)).
    work = Path(tempfile.mkdtemp(prefix="rtls", dir="/tmp"))
    try:
        with pytest.MonkeyPatch.context() as env, redis_server(free_port(), work, tls_files(work / "tls")) as redis:
            env.delenv("SSL_CERT_FILE", raising=False)
            env.delenv("SSL_CERT_DIR", raising=False)
            lab = Lab(work, redis, {})
            with ThreadPoolExecutor(len(HEAD_CASES)) as pool:
                futures = {name: pool.submit(run, lab, work / name) for name, run in HEAD_CASES.items()}
                lab.heads = {name: future.result() for name, future in futures.items()}
            yield lab
    except RuntimeError as error:
        if "TLS" not in str(error) or os.environ.get("CI") == "true":
            raise
        pytest.skip(f"redis-server on PATH did not start with TLS, install Debian's (./setup.sh redis): {error}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_with_no_ca_variable_the_head_checks_the_certificate_and_stops_on_an_unknown_ca(lab):
    """hiredis' TLS context asks for the peer's certificate to verify (SSL_VERIFY_PEER; redis/hiredis ssl.c
    redisCreateSSLContext, built into Ray: ray_config_def.h REDIS_CA_CERT ... REDIS_SERVER_NAME feed it in
    src/ray/gcs/store_client/redis_context.cc RedisContext::RedisContext), and a failed verification is fatal (a
    RAY_CHECK on Connect), not retried: the head stops in seconds."""
    head = lab.heads["no-ca-variable"]
    assert not head.up
    assert "CERTIFICATE_VERIFY_FAILED" in head.log


def test_ray_redis_ca_cert_is_the_ca_the_head_trusts(lab):
    head = lab.heads["ca-cert"]
    assert head.up, head.messages()
    assert "GCS storage type is StorageType::REDIS_PERSIST" in head.gcs_log


def test_with_no_ray_variable_the_trust_is_the_default_lookup_which_ssl_cert_file_moves(lab):
    """With no RAY_REDIS_CA_CERT / RAY_REDIS_CA_PATH hiredis falls back to the default verify paths
    (SSL_CTX_set_default_verify_paths), which honour SSL_CERT_FILE: the CA there is trusted with no Ray variable. (So
    a test run must keep its own SSL_CERT_FILE / SSL_CERT_DIR from the heads, as the fixture does.)"""
    head = lab.heads["ssl-cert-file"]
    assert head.up, head.messages()


def test_the_default_lookup_finds_a_ca_in_etc_ssl_certs_by_its_subject_hash(lab):
    """With no variable at all the lookup is BoringSSL's default (linked into _raylet.so and gcs_server; their strings
    name /etc/ssl/certs, /etc/ssl/cert.pem, SSL_CERT_DIR, SSL_CERT_FILE): the folder /etc/ssl/certs, searched by
    subject-hash file name, which is how Debian and Ubuntu's update-ca-certificates lays out the system's CAs."""
    head = lab.heads["hashed"]
    if isinstance(head, str):
        pytest.skip(head)
    assert head.up, head.messages()


def test_the_default_lookup_does_not_read_the_ca_certificates_bundle(lab):
    """/etc/ssl/certs/ca-certificates.crt is not among the default places: a CA that is only in that file is not
    trusted unless RAY_REDIS_CA_CERT (or SSL_CERT_FILE) names it. ray-project/ray#41161 (ElastiCache, Ray 2.7/2.8:
    CERTIFICATE_VERIFY_FAILED) was answered with RAY_REDIS_CA_CERT=/etc/ssl/certs/ca-certificates.crt."""
    head = lab.heads["bundle-only"]
    if isinstance(head, str):
        pytest.skip(head)
    assert not head.up
    assert "CERTIFICATE_VERIFY_FAILED" in head.log


def test_neither_the_address_nor_ray_redis_server_name_is_matched_against_the_certificate(lab):
    """Verification is the chain only: a certificate for `localhost` is accepted from 127.0.0.1 with SNI naming a
    third host. hiredis sets RAY_REDIS_SERVER_NAME as SNI alone (ssl.c redisInitiateSSLWithContext:
    SSL_set_tlsext_host_name) and asks no host name check (no SSL_set1_host / X509_VERIFY_PARAM_set1_host)."""
    head = lab.heads["other-name"]
    assert head.up, head.messages()


def test_a_ca_file_that_is_not_there_stops_the_head(lab):
    """redisCreateSSLContext fails on a CA file it cannot load, and Ray RAY_CHECKs the context: a missing bundle in
    an image stops the head, it never connects unverified."""
    head = lab.heads["missing-ca-file"]
    assert not head.up
    assert "Failed to load CA Certificate" in head.log


def test_a_restarted_head_finds_its_cluster_in_redis_over_tls(lab):
    """The second head's GCS reads the first one's cluster ID back from Redis ("Using existing cluster ID from
    external storage", gcs_server.cc) and keeps it, which is what lets the workers of the old head rejoin; its
    store is the persisted Redis one."""
    first, second = lab.heads["restart"]
    assert first.up and second.up, (first.messages(), second.messages())
    assert "Generated new cluster ID" in first.gcs_log
    assert "Using existing cluster ID from external storage" in second.gcs_log
    assert second.cluster_id() == first.cluster_id()


def test_kuberays_cleanup_job_needs_the_heads_ca_too(lab):
    """The cleanup Job is a copy of the head pod's Ray container (buildRedisCleanupJob: buildHeadPod), so it gets the
    head's RAY_REDIS_CA_CERT; its Python calls the same C++ client (ray._raylet del_key_prefix_from_storage), which
    without the CA fails the check: the Job fails and the namespace stays."""
    cleanup = redis_cleanup(lab.redis, "restart", leave_out=("RAY_REDIS_CA_CERT",))
    assert cleanup["exit_status"] != 0
    assert "CERTIFICATE_VERIFY_FAILED" in cleanup["output"]
    assert cleanup["keys_after"] == cleanup["keys_before"] > 0


def test_kuberays_cleanup_job_empties_the_namespace_over_tls_with_the_heads_env(lab):
    cleanup = redis_cleanup(lab.redis, "ca-cert")
    assert cleanup["keys_before"] > 0
    assert (cleanup["exit_status"], cleanup["keys_after"]) == (0, 0), cleanup["output"]
