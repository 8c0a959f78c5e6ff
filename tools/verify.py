"""Post-deploy verification: the stack serves, and its KV-cache transfer rides EFA.

    python -m tools.verify --stack dev [--nccl]

It reads the stack's outputs and runs the checks of docs/operations.md#verify-prove-a-deployment-works-over-efa (GPU
nodes, RayService, Ray head, OpenAI API, NIXL over EFA, prefill/decode from Prometheus, optional NCCL), one progress
line per step and a verdict at the end. Exit status: 0 every required check passed, 1 one failed, 2 it could not
start. Kubernetes is reached through the small `Cluster` interface (tools/verify_access.py), so tests replay recorded
API objects; the checks are tools/verify_checks.py's."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TextIO

from kubernetes import config as kubernetes_config

from tools.probe import CheckResult, Report
from tools.verify_access import Cluster, KubernetesCluster, VerifyError, kubeconfig_file, port_forward, read_outputs
from tools.verify_checks import NCCL_CHECK, PD_METRICS_CHECK, REQUIRED_CHECKS, Check, VerifyContext


def verify(ctx: VerifyContext, checks: Sequence[Check], out: TextIO) -> bool:
    """Runs the checks in order, printing each as it goes; True when every required one passed."""
    outputs = ctx.outputs
    print(
        f"Verifying RayService {outputs.namespace}/{outputs.ray_service_name}, model {outputs.model_id}, "
        f"GPU node group {outputs.gpu_node_group_name}",
        file=out,
        flush=True,
    )
    report = Report(out)
    for number, check in enumerate(checks, start=1):
        print(f"[{number}/{len(checks)}] {check.title} ...", file=out, flush=True)
        try:
            result = check.run(ctx)
        except Exception as error:  # an unexpected API error fails this check, not the whole run
            result = CheckResult(False, f"{type(error).__name__}: {error}")
        report.record(check.name, result, check.required)
    print(report.verdict("VERDICT"), file=out)
    return report.ok


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tools.verify",
        description="Verify a deployed stack: GPU/EFA nodes, RayService, API, NIXL over EFA.",
    )
    parser.add_argument("--stack", default="dev", help="stack whose outputs to read (default: dev)")
    parser.add_argument(
        "--outputs-file", type=Path, help="read the outputs from this JSON file, not from `pulumi stack output`"
    )
    parser.add_argument("--kubeconfig", help="kubeconfig to use (default: the stack's kubeconfig output)")
    parser.add_argument(
        "--base-url", help="OpenAI API base URL to test instead of a port-forward, e.g. http://127.0.0.1:8000/v1"
    )
    parser.add_argument(
        "--kubectl", default="kubectl", help="kubectl executable for the port-forward (default: kubectl)"
    )
    parser.add_argument(
        "--timeout", type=float, default=120.0, help="seconds to wait for each API response (default: 120)"
    )
    parser.add_argument(
        "--prometheus-url", help="Prometheus base URL to read instead of a port-forward, e.g. http://127.0.0.1:9090"
    )
    parser.add_argument(
        "--metrics-wait",
        type=float,
        default=120.0,
        help="seconds to wait for Prometheus to show a healthy PD pair (default: 120)",
    )
    parser.add_argument("--nccl", action="store_true", help="also run the optional NCCL all-reduce between two workers")
    return parser


def main(argv: Sequence[str] | None = None, connect: Callable[[str | None], Cluster] = KubernetesCluster) -> int:
    args = build_parser().parse_args(argv)
    try:
        outputs = read_outputs(args.stack, args.outputs_file)
    except VerifyError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    with kubeconfig_file(outputs, args.kubeconfig) as kubeconfig:

        def open_endpoint() -> AbstractContextManager[str]:
            if args.base_url:
                return nullcontext(args.base_url)
            return port_forward(outputs.namespace, outputs.serve_service, outputs.serve_port, kubeconfig, args.kubectl)

        try:
            cluster = connect(kubeconfig)
        except kubernetes_config.ConfigException as error:
            print(f"error: no usable kubeconfig: {error}", file=sys.stderr)
            return 2

        def open_prometheus() -> AbstractContextManager[str]:
            if args.prometheus_url:
                return nullcontext(args.prometheus_url)
            namespace, service, port = outputs.prometheus_service
            return port_forward(namespace, service, port, kubeconfig, args.kubectl, path="")

        with_prometheus = bool(outputs.prometheus_endpoint or args.prometheus_url)
        ctx = VerifyContext(
            outputs,
            cluster,
            open_endpoint,
            args.timeout,
            open_prometheus if with_prometheus else None,
            args.metrics_wait,
        )
        checks = [
            *REQUIRED_CHECKS,
            *([PD_METRICS_CHECK] if with_prometheus else []),
            *([NCCL_CHECK] if args.nccl else []),
        ]
        return 0 if verify(ctx, checks, sys.stdout) else 1


if __name__ == "__main__":
    sys.exit(main())
