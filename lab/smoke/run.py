"""One smoke run, top-down: build and validate the app, start Ray, deploy, run each check, stop Ray, report."""

from __future__ import annotations

import argparse
import json
import logging
import secrets
import tempfile
import time
from pathlib import Path
from typing import Any

from infra.settings.kv_offload import nixl_config
from lab.s3_load import local_s3
from lab.smoke.app import serve_stack_config, smoke_serve_config, validate_with_ray, write_code_packages
from lab.smoke.args import parse_args
from lab.smoke.auth import AUTH_KEY_COUNT, check_auth, check_no_key_in_logs, write_auth_files
from lab.smoke.bench import run_bench
from lab.smoke.checks import run_requests
from lab.smoke.deploy import DASHBOARD_URL, deploy_and_wait, http_request, ray_cli, wait_for
from lab.smoke.document import engines_of, format_path, served_engine, unexplained_changes
from lab.smoke.host import detect_host, gpu_count, gpu_memory_mib, model_has_mamba_state
from lab.smoke.logs import ANSI_ESCAPE, NIXL_DEBUG_LOGGING, check_nixl_logs, report_engine_memory
from lab.smoke.metrics import METRICS_PORT, METRICS_REPORT_WAIT_S, scrape_metrics, write_metrics
from lab.smoke.models import check_models, stage_adapters
from lab.smoke.overrides import AUTH_KEYS_FILE, VLLM_DEFAULT_GPU_MEMORY_UTILIZATION, SmokeOptions, gpus_needed
from lab.smoke.update import missing_model_dir, run_update_scenario, update_steps
from tools.probe import CheckResult, Report


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # Once Ray is imported, its root logger prints every request of the OpenAI client (httpx) at INFO: a line per
    # request of the update scenario's traffic (measured), whose results are recorded anyway.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    if not (args.model_dir / "config.json").is_file():
        print(f"{args.model_dir} holds no config.json: make one with `python -m lab.tiny_model DIR`")
        return 2
    work_dir = Path(tempfile.mkdtemp(prefix="ray-llm-smoke-"))
    # Fresh keys for this run, never printed: the auth check and the log check use them.
    api_keys = tuple(secrets.token_hex(32) for _ in range(AUTH_KEY_COUNT)) if args.api_key_auth else ()
    if api_keys:
        write_auth_files(work_dir, api_keys)
    opts = smoke_options(args, work_dir, api_keys)
    try:
        smoke = build_app(args, opts, work_dir, api_keys)
    except Refusal as refusal:
        print(refusal)
        return refusal.exit_code
    if args.dry_run:
        print(json.dumps(smoke, indent=2))
        return 0
    report = run_with_adapters(smoke, opts, args, api_keys)
    print(report.verdict("SMOKE"), flush=True)
    return 0 if report.ok else 1


def smoke_options(args: argparse.Namespace, work_dir: Path, api_keys: tuple[str, ...]) -> SmokeOptions:
    """The overrides' options from the command line; the NIXL DEBUG logging config written into `work_dir`."""
    logging_config = work_dir / "nixl-debug-logging.json"
    logging_config.write_text(json.dumps(NIXL_DEBUG_LOGGING, indent=2))
    return SmokeOptions(
        model_dir=args.model_dir.resolve(),
        model_has_mamba_state=model_has_mamba_state(args.model_dir),
        aggregated=args.aggregated,
        kv_roles=args.kv_roles,
        gpu_memory_utilization=args.gpu_memory_utilization,
        emulated_gpu=None if args.gpu_memory_of is None else (args.gpu_memory_of, gpu_memory_mib()),
        max_model_len=args.max_model_len,
        enforce_eager=args.enforce_eager,
        unset_env=tuple(args.unset_env),
        logging_config_path=None if args.aggregated else logging_config,
        share_gpu=args.share_gpu,
        shared_gpu_executor=args.shared_gpu_executor,
        auth_dir=work_dir if api_keys else None,
        code_dir=work_dir,
        model_dirs=tuple((model_id, path.resolve()) for model_id, path in args.model_dir_of.items()),
    )


class Refusal(Exception):
    """The run stops before Ray starts: the options cannot hold this app (exit 2), or the overrides do not explain
    the config (exit 1)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def build_app(
    args: argparse.Namespace, opts: SmokeOptions, work_dir: Path, api_keys: tuple[str, ...]
) -> dict[str, Any]:
    """The serve config this host runs, each override printed and every document checked by Ray's schemas."""
    host = detect_host()
    libfabric = ".".join(map(str, host.libfabric)) if host.libfabric else "missing"
    print(
        f"host: EFA device {'found' if host.has_efa else 'absent'}, flashinfer {host.has_flashinfer}, "
        f"libfabric {libfabric}"
    )
    cfg = serve_stack_config(args.stack, args.config, api_keys)
    write_code_packages(cfg, work_dir)
    production, smoke, overrides = smoke_serve_config(cfg, opts, host)
    engines = engines_of(smoke)
    if opts.share_gpu and opts.gpu_memory_utilization * engines > VLLM_DEFAULT_GPU_MEMORY_UTILIZATION:
        raise Refusal(
            f"--share-gpu runs {engines} engines on one GPU: --gpu-memory-utilization at most "
            f"{VLLM_DEFAULT_GPU_MEMORY_UTILIZATION / engines:.2f} each",
            2,
        )
    print(f"serve config of stack {args.stack!r} from infra.serving.serve_config.build_serve_config, with overrides:")
    for override in overrides:
        print(f"  override {override.describe()}")
    unexplained = unexplained_changes(production, smoke, overrides)
    if unexplained:
        raise Refusal(f"config differs where no override says: {sorted(map(format_path, unexplained))}", 1)
    (work_dir / "serve-config.json").write_text(json.dumps(smoke, indent=2))
    validate_with_ray(smoke)
    print(f"config valid for Ray's ServeDeploySchema and LLMConfig; written to {work_dir / 'serve-config.json'}")
    if args.update_scenario:
        for step in update_steps(smoke, missing_model_dir(opts.model_dir)):
            validate_with_ray(step.config)
            print(f"update {step.name} ({step.change}): config valid, expected verdict {step.expected}")
    return smoke


def run_with_adapters(
    smoke: dict[str, Any], opts: SmokeOptions, args: argparse.Namespace, api_keys: tuple[str, ...]
) -> Report:
    """The run, inside a local S3 server holding the listed adapters where the serve config loads them
    (lab/smoke/models.py) when --adapters-dir gives them."""
    if args.adapters_dir is None:
        return run_smoke(smoke, opts, args, api_keys)
    cfg = serve_stack_config(args.stack, args.config, api_keys)
    with tempfile.TemporaryDirectory(prefix="ray-llm-adapters-") as root:
        for staged in stage_adapters(cfg, args.adapters_dir, Path(root)):
            print(f"adapter staged at {staged}")
        with local_s3(Path(root)) as endpoint:
            print(f"adapters served by rclone's S3 server at {endpoint}")
            return run_smoke(smoke, opts, args, api_keys)


def run_smoke(
    smoke: dict[str, Any], opts: SmokeOptions, args: argparse.Namespace, api_keys: tuple[str, ...] = ()
) -> Report:
    report = Report()
    needed = gpus_needed(smoke, opts)
    gpus = gpu_count()
    if not report.record("gpus", CheckResult(gpus >= needed, f"{gpus} NVIDIA GPU(s), {needed} needed")):
        return report
    if not start_ray(report, args):
        return report
    scrapes = MetricsScrapes(args.metrics_out is not None)
    try:
        check_serving(report, smoke, opts, args, api_keys, scrapes)
    finally:
        if scrapes.taken:
            write_metrics(args.metrics_out, scrapes.taken)
        stopped = ray_cli("stop")
        last_line = (stopped.stdout + stopped.stderr).strip().splitlines()[-1:] or [""]
        report.record("ray_stop", CheckResult(stopped.returncode == 0, ANSI_ESCAPE.sub("", last_line[0])))
    return report


def start_ray(report: Report, args: argparse.Namespace) -> bool:
    start = time.monotonic()
    metrics_port = [f"--metrics-export-port={METRICS_PORT}"] if args.metrics_out else []
    started = ray_cli(
        "start", "--head", "--temp-dir", args.ray_temp_dir, "--dashboard-host", "127.0.0.1", "--disable-usage-stats",
        *metrics_port,
    )  # fmt: skip
    if not report.record("ray_start", CheckResult(started.returncode == 0, f"{time.monotonic() - start:.1f} s")):
        print(started.stdout[-3000:], started.stderr[-3000:], sep="\n")
        return False
    return True


class MetricsScrapes:
    """Ray's metrics export at each stage of the run (`--metrics-out`); nothing when it is off."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.taken: dict[str, dict[str, float]] = {}

    def take(self, stage: str) -> None:
        if self.enabled:
            # let the processes report what the load just did
            self.taken[stage] = scrape_metrics() if stage == "running" else self.reported()

    @staticmethod
    def reported() -> dict[str, float]:
        """A scrape once what the processes did until now has reached the export."""
        time.sleep(METRICS_REPORT_WAIT_S)
        return scrape_metrics()


def check_serving(
    report: Report,
    smoke: dict[str, Any],
    opts: SmokeOptions,
    args: argparse.Namespace,
    api_keys: tuple[str, ...],
    scrapes: MetricsScrapes,
) -> None:
    """Deploy the app on the running Ray, then every check the options ask for, in order; the first failure of the
    deploy stops the rest."""
    ray_temp_dir = Path(args.ray_temp_dir)
    dashboard = wait_for(
        "the dashboard", lambda: http_request("GET", f"{DASHBOARD_URL}/api/serve/applications/")[0] == 200, 120
    )
    if not report.record("dashboard", CheckResult(dashboard, DASHBOARD_URL)):
        return
    running, elapsed, detail = deploy_and_wait(smoke, args.deploy_timeout)
    if not report.record(
        "running", CheckResult(running, f"{elapsed:.0f} s from deploy to RUNNING" if running else detail)
    ):
        return
    served = served_engine(smoke)
    report_engine_memory(ray_temp_dir)
    model_id = served["model_loading_config"]["model_id"]
    scrapes.take("running")
    api_key = api_keys[0] if api_keys else None
    if api_keys and opts.auth_dir is not None:
        api_keys = (*api_keys, check_auth(report, model_id, api_keys, opts.auth_dir / AUTH_KEYS_FILE))
    run_requests(report, model_id, args.max_tokens, args.requests, api_key=api_key)
    if "pd_config" in smoke["applications"][0]["args"]:
        check_models(report, serve_stack_config(args.stack, args.config, api_keys), api_key)
    if not opts.aggregated:
        backend = nixl_config(served["engine_kwargs"]["kv_transfer_config"])["kv_connector_extra_config"]["backends"][0]
        check_nixl_logs(report, ray_temp_dir, backend)
    if args.bench:
        run_bench(report, model_id, opts.model_dir, args, api_key, scrapes.reported if scrapes.enabled else None)
    scrapes.take("after-requests")
    if api_keys:
        check_no_key_in_logs(report, ray_temp_dir, api_keys)
    if args.update_scenario and report.ok:
        run_update_scenario(report, smoke, model_id, missing_model_dir(opts.model_dir), args, api_key)
        scrapes.take("after-update")
