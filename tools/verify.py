"""Post-deploy verification: the stack serves, and its KV-cache transfer rides EFA.

    python -m tools.verify --stack dev [--nccl]

It automates the sample's manual checks from the stack's outputs (`pulumi stack output --json
--show-secrets`, or `--outputs-file`), one progress line per step and a verdict at the end:

    1. every GPU node is Ready and advertises allocatable nvidia.com/gpu and vpc.amazonaws.com/efa;
    2. the RayService is Running (Ready), no application is DEPLOY_FAILED or UNHEALTHY (KubeRay keeps Ready
       over them), no second cluster is pending, and KubeRay's serve Service exists;
    3. the Ray head: ready, or restarting; its restarts and last exit; whether the cluster keeps its tables in a
       GCS store (headFaultTolerance) and, after a restart, whether the GPU workers kept running through it. A head
       restarting with the store passes (the workers serve on: step 4 shows it); without it, or once a restart with
       the store has restarted the workers too, it fails;
    4. through `kubectl port-forward` (or `--base-url`), /v1/models lists the model and a streamed
       chat completion returns tokens: time to first token and tokens/s are printed; when the stack has
       API keys, the calls send `serveApiKey` and a request without a key must get 401;
    5. every Ray worker's logs say NIXL instantiated the LIBFABRIC backend: UCX, NIXL's silent
       fallback at TCP speed, fails the check;
    6. with the stack's Prometheus (`observability`): through a port-forward to it (or `--prometheus-url`),
       each PD side's requests, TTFT and TPOT percentiles and NIXL KV transfers (count, bytes, time,
       failures) since its replicas started; a side that served nothing, no KV transfer, or a failed
       transfer fails the check (waiting up to `--metrics-wait` seconds for the scrapes to see check 4);
    7. optional (`--nccl`): an NCCL all-reduce between two worker pods reports bus bandwidth and the
       libfabric provider NCCL picked. It does not change the verdict.

Exit status: 0 every required check passed, 1 one failed, 2 it could not start (outputs unreadable).
Kubernetes is reached through the small `Cluster` interface (tools/verify_access.py), so tests replay recorded API
objects; the checks are tools/verify_checks.py's.
"""

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
