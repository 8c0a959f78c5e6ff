"""The TLS material of a Redis that speaks TLS only, for measuring Ray's GCS against it on this machine: a throwaway
certificate authority that no system trust store holds, and a server certificate it signs for one DNS name, made with
the openssl command line (Debian's `openssl`). Nothing here is used by `pulumi up`: ElastiCache's certificates come
from Amazon (docs/head-fault-tolerance.md, "Redis over TLS, measured").
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

# Resolves to the loopback on every machine without touching /etc/hosts, so a certificate for it names the server.
TLS_HOST = "localhost"
CERT_DAYS = 2


@dataclass(frozen=True)
class TlsFiles:
    ca: Path  # the CA certificate a client must trust
    cert: Path  # the server's certificate, signed by that CA
    key: Path  # the server's private key


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, text=True)


def certificate_authority(folder: Path, name: str) -> tuple[Path, Path]:
    """A self-signed CA certificate and its key, both in `folder`."""
    cert, key = folder / f"{name}.crt", folder / f"{name}.key"
    openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
        "-subj", f"/CN={name}", "-days", str(CERT_DAYS),
    )  # fmt: skip
    return cert, key


def server_certificate(folder: Path, ca: tuple[Path, Path], dns_name: str) -> TlsFiles:
    """A key and a certificate for `dns_name` (subject and subjectAltName), signed by `ca`."""
    ca_cert, ca_key = ca
    key, request, cert, extensions = (folder / f"{dns_name}.{suffix}" for suffix in ("key", "csr", "crt", "ext"))
    openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(request), "-subj", f"/CN={dns_name}",
    )  # fmt: skip
    extensions.write_text(f"subjectAltName=DNS:{dns_name}\n")
    openssl(
        "x509", "-req", "-in", str(request), "-CA", str(ca_cert), "-CAkey", str(ca_key), "-CAcreateserial",
        "-days", str(CERT_DAYS), "-out", str(cert), "-extfile", str(extensions),
    )  # fmt: skip
    return TlsFiles(ca_cert, cert, key)


def tls_files(folder: Path, dns_name: str = TLS_HOST) -> TlsFiles:
    """A fresh CA and a server certificate for `dns_name` it signs, in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    return server_certificate(folder, certificate_authority(folder, "test-ca"), dns_name)


def redis_tls_arguments(files: TlsFiles, port: int) -> list[str]:
    """redis-server's options for TLS on `port` and no plain port, clients not asked for a certificate (as
    ElastiCache's in-transit encryption with AUTH: https://valkey.io/topics/tls/, `port 0`, `tls-auth-clients no`)."""
    return [
        "--port", "0", "--tls-port", str(port), "--tls-cert-file", str(files.cert), "--tls-key-file", str(files.key),
        "--tls-ca-cert-file", str(files.ca), "--tls-auth-clients", "no",
    ]  # fmt: skip
