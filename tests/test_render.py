"""`python -m tools.render`: every rendered object is valid Kubernetes, secrets stay out, errors name keys."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
import yaml

from infra.serving import edge, model_cache, serve_auth
from infra.settings.kinds import API_ALLOW_LIST_COMMAND
from infra.settings.reader import SECRET_SETTINGS
from infra.settings.rules_network import OFFLINE_ALLOW_LIST_OPTION
from tests.conftest import (
    API_ALLOW_LIST_KEY,
    API_KEYS,
    OPERATOR_CERTIFICATE,
    OPERATOR_CIDRS,
    SHIPPED_STACK_FILE_VALUES,
    rejection,
)
from tests.rayservice_parts import worker_group
from tests.schemas import core_object_errors, custom_resource_validator, rayservice_errors, schema_errors, schemas_dir
from tests.test_bad_input import run_as_copied
from tools import offline, offline_aws, render
from tools.offline import ALLOW_LIST_PLACEHOLDER, StackRun, load_stack_config
from tools.project import PROJECT_DIR, SHIPPED_STACKS
from tools.render import REDACTED, main

HF_TOKEN = "hf_NotARealTokenButLongEnough"
# A stack variant with every optional object: the token's Secret and the serve load balancer.
EVERY_OBJECT = [
    "--secret",
    f"hfToken={HF_TOKEN}",
    "--config",
    "serveExposure=internet-facing",
    "--config",
    'serveSourceCidrs=["100.24.20.0/24"]',
    "--config",
    f"serveCertificateArn={OPERATOR_CERTIFICATE.format(region='sa-east-1')}",
    "--secret",
    f"serveApiKeys={json.dumps(API_KEYS)}",
]


def render_into(out: Path, *args: str) -> Path:
    assert main(["--out", str(out), *args]) == 0
    return out


def rendered(out: Path) -> dict[str, str]:
    return {str(path.relative_to(out)): path.read_text() for path in sorted(out.rglob("*")) if path.is_file()}


def manifests(out: Path) -> list[dict]:
    return [yaml.safe_load(path.read_text()) for path in sorted((out / "manifests").glob("*.yaml"))]


@pytest.fixture(scope="module", params=SHIPPED_STACKS)
def shipped_render(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render_into(tmp_path_factory.mktemp(request.param), "--stack", request.param)


@pytest.fixture(scope="module")
def full_request() -> render.RenderRequest:
    request, _ = render.parse_args(["--stack", "dev", *EVERY_OBJECT])
    return request


@pytest.fixture(scope="module")
def full_run(full_request: render.RenderRequest) -> StackRun:
    return render.evaluate(full_request)


@pytest.fixture(scope="module")
def full_render(
    full_run: StackRun, full_request: render.RenderRequest, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The library path of the render; the CLI path is compared with it below."""
    out = tmp_path_factory.mktemp("full")
    render.write_files(out, render.rendered_files(full_run, full_request))
    return out


def test_shipped_stack_renders_every_file(shipped_render):
    files = rendered(shipped_render)
    assert {"plan.md", "serve-config.yaml"} <= files.keys()
    assert {path for path in files if path.startswith("helm/")} == {
        "helm/kuberay-operator.values.yaml",
        "helm/nvidia-device-plugin.values.yaml",
        "helm/efa-device-plugin.values.yaml",
        "helm/kube-prometheus-stack.values.yaml",
        "helm/dcgm-exporter.values.yaml",
    }
    kinds = [manifest["kind"] for manifest in manifests(shipped_render)]
    assert (kinds[0], kinds[-2], kinds[-1]) == ("Namespace", "PrometheusRule", "DaemonSet")
    # The monitoring objects need the CRDs the kube-prometheus-stack release installs: after the serving ones.
    assert kinds.index("RayService") < kinds.index("ConfigMap") < kinds.index("PodMonitor")


def serve_edge_configmap(run: StackRun) -> str:
    volumes = worker_group(run)["template"]["spec"]["volumes"]
    return {v["name"]: v for v in volumes}[edge.CONFIGMAP_PREFIX]["configMap"]["name"]


def test_every_object_is_rendered_in_apply_order(full_run, full_render):
    names = sorted(path.name for path in (full_render / "manifests").iterdir())
    mirror_job = model_cache.mirror_job_name("Qwen/Qwen3.5-9B", full_run.outputs["modelCacheUri"])
    assert names == [
        "01-namespace-inference.yaml",
        # The Pod Security labels of the namespaces the kuberay-operator and kube-prometheus-stack releases create.
        "01-namespace-kuberay-system.yaml",
        "01-namespace-model-cache.yaml",
        "01-namespace-monitoring.yaml",
        # Before the pods they guard: a pod started before its policies is open until they exist.
        "02-networkpolicy-alertmanager-from-prometheus-and-grafana.yaml",
        "02-networkpolicy-anyone-to-serve.yaml",
        "02-networkpolicy-api-server-to-operator-webhook.yaml",
        "02-networkpolicy-default-deny-ingress.yaml",
        "02-networkpolicy-head-to-agents.yaml",
        "02-networkpolicy-monitoring-default-deny-ingress.yaml",
        "02-networkpolicy-operator-to-dashboard.yaml",
        "02-networkpolicy-prometheus-from-grafana-and-itself.yaml",
        "02-networkpolicy-prometheus-to-dcgm-exporter.yaml",
        "02-networkpolicy-prometheus-to-grafana.yaml",
        "02-networkpolicy-prometheus-to-head-metrics.yaml",
        "02-networkpolicy-prometheus-to-kube-state-metrics.yaml",
        "02-networkpolicy-prometheus-to-metrics.yaml",
        "02-networkpolicy-ray-pods-to-gcs.yaml",
        "02-networkpolicy-ray-pods-to-ray-nodes.yaml",
        "02-networkpolicy-workers-to-nixl.yaml",
        # The head's GCS store password (headFaultTolerance redis), read by KubeRay into the head's environment.
        "03-secret-gcs-redis.yaml",
        # With the model cache only the mirror reads the Hub: the token's one Secret is in its namespace.
        "03-secret-model-mirror-hf-token.yaml",
        "03-secret-serve-api-keys.yaml",
        "04-serviceaccount-model-mirror.yaml",
        "04-serviceaccount-model-reader.yaml",
        # The store's address: an ExternalName alias of its primary endpoint.
        "05-service-gcs-redis.yaml",
        "05-service-ray-llm-serve-lb.yaml",
        f"06-job-{mirror_job}.yaml",
        "07-rayservice-ray-llm.yaml",
        "08-configmap-dashboard-dcgm-exporter.yaml",
        "08-configmap-dashboard-pd-health.yaml",
        "08-configmap-dashboard-ray-serve-deployment.yaml",
        "08-configmap-dashboard-ray-serve-llm.yaml",
        "08-configmap-dashboard-ray-serve.yaml",
        # The CAs the head trusts for the store's TLS (RAY_REDIS_CA_CERT names a file of it).
        "08-configmap-gcs-redis-ca.yaml",
        # The kubelet retries a pod's volume until its ConfigMap exists; `pulumi up` creates it first.
        "08-configmap-model-mirror-script.yaml",
        f"08-configmap-{serve_auth.CODE.configmap_name()}.yaml",
        # The edge's configuration, which the worker pods mount (infra/serving/edge.py).
        f"08-configmap-{serve_edge_configmap(full_run)}.yaml",
        "09-podmonitor-kuberay-operator.yaml",
        "09-podmonitor-ray-head.yaml",
        "09-podmonitor-ray-workers.yaml",
        "10-prometheusrule-ray-llm-eks.yaml",
        # Applied by hand the nodes are there already: the pre-puller only keeps the image on them.
        "11-daemonset-image-prepull.yaml",
    ]


# The prometheus-operator CRDs kube-prometheus-stack 88.5.3 installs.
MONITORING_CRDS = {"PodMonitor": "crd-podmonitors.yaml", "PrometheusRule": "crd-prometheusrules.yaml"}


def assert_every_object_validates(out: Path) -> None:
    for manifest in manifests(out):
        if manifest["kind"] == "RayService":
            assert rayservice_errors(manifest) == [], "RayService against the KubeRay 1.7.0 CRD"
        elif manifest["kind"] in MONITORING_CRDS:
            crd = schemas_dir() / "kube-prometheus-stack-88.5.3" / MONITORING_CRDS[manifest["kind"]]
            assert schema_errors(custom_resource_validator(crd), manifest) == [], manifest["kind"]
        else:
            assert core_object_errors(manifest) == [], f"{manifest['kind']} against Kubernetes 1.35"


def test_every_object_of_a_shipped_stack_validates(shipped_render):
    assert_every_object_validates(shipped_render)


def test_secret_and_load_balancer_validate_too(full_render):
    assert_every_object_validates(full_render)


def by_kind(out: Path) -> dict[str, dict]:
    return {manifest["kind"]: manifest for manifest in manifests(out)}


def test_validation_would_catch_a_misspelt_field(full_render):
    rayservice, service = by_kind(full_render)["RayService"], by_kind(full_render)["Service"]
    rayservice["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["replica"] = 2
    service["spec"]["sourceRanges"] = ["0.0.0.0/0"]
    assert any("'replica' was unexpected" in error for error in rayservice_errors(rayservice))
    assert any("'sourceRanges' was unexpected" in error for error in core_object_errors(service))


def test_numbers_are_integers_not_pulumi_floats(full_render):
    workers = by_kind(full_render)["RayService"]["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]
    assert workers["replicas"] == 2 and isinstance(workers["replicas"], int)
    assert "2.0" not in (full_render / "manifests/07-rayservice-ray-llm.yaml").read_text()


def test_serve_config_is_the_rayservices_own(shipped_render):
    serve_config = (shipped_render / "serve-config.yaml").read_text()
    own = by_kind(shipped_render)["RayService"]["spec"]["serveConfigV2"]
    assert serve_config == render.placeholder_header(own) + own
    app = yaml.safe_load(serve_config)["applications"][0]
    assert app["import_path"] == "ray.serve.llm:build_pd_openai_app"


def test_helm_values_are_installable_as_rendered(shipped_render):
    efa = (shipped_render / "helm/efa-device-plugin.values.yaml").read_text()
    assert "helm upgrade --install efa-device-plugin aws-efa-k8s-device-plugin" in efa
    assert "--version v0.5.30 --namespace kube-system" in efa
    values = yaml.safe_load(efa)
    assert values["nodeSelector"] == {"role": "gpu-worker"}
    assert values["image"]["repository"].endswith("/eks/aws-efa-k8s-device-plugin")


def test_plan_lists_every_resource_with_key_settings(full_render, full_run):
    plan = (full_render / "plan.md").read_text()
    for resource in full_run.resources:
        assert f"| {resource.type} | {resource.name} |" in plan
    assert "instance types: g6.8xlarge; nodes: 2" in plan
    assert "instance types: m7i.xlarge; nodes: 1" in plan
    assert "AZ: sa-east-1a; CIDR: 10.0.0.0/19" in plan
    assert "root GiB: 200" in plan
    assert "network interfaces: efa;" in plan
    assert "| maxModelLen | 2048 | Pulumi.dev.yaml |" in plan


def test_secrets_are_never_written(full_render):
    files = rendered(full_render)
    assert not [path for path, text in files.items() if HF_TOKEN in text]
    # The mock cluster's kubeconfig carries a token too: it is a secret output and a secret input.
    assert not [path for path, text in files.items() if "t0ken" in text]
    mirror_secret = "manifests/03-secret-model-mirror-hf-token.yaml"
    assert yaml.safe_load(files[mirror_secret])["stringData"] == {"HF_TOKEN": REDACTED}
    assert "kubectl create secret generic model-mirror-hf-token -n model-cache" in files[mirror_secret]
    assert "| hfToken | [secret] | --secret |" in files["plan.md"]
    assert "| kubeconfig | [secret] |" in files["plan.md"]


def test_api_keys_are_never_written(full_render):
    """Each key of the list stays out of every file: the keys Secret is redacted, the key output shown as secret."""
    files = rendered(full_render)
    assert not [path for path, text in files.items() if any(key in text for key in API_KEYS)]
    secret = yaml.safe_load(files["manifests/03-secret-serve-api-keys.yaml"])
    assert secret["stringData"] == {"keys": REDACTED}
    assert "| serveApiKeys | [secret] | --secret |" in files["plan.md"]
    assert "| serveApiKey | [secret] |" in files["plan.md"]


def test_a_key_of_the_list_would_stop_the_write():
    files = {"plan.md": f"key: {API_KEYS[1]}"}
    assert render.leaked_secrets(files, [json.dumps(API_KEYS)]) == ["plan.md"]


def test_a_secret_that_would_leak_stops_the_write():
    files = {"plan.md": "token: hf_abcdef", "serve-config.yaml": "nothing"}
    assert render.leaked_secrets(files, ["hf_abcdef", "1"]) == ["plan.md"]


def test_a_token_encrypted_in_the_stack_file_is_treated_as_secret(monkeypatch, tmp_path):
    encrypted = {"ray-llm-eks:hfToken": {"secure": "v1:AAAABBBB"}, API_ALLOW_LIST_KEY: OPERATOR_CIDRS}
    monkeypatch.setattr(offline, "_stack_file_values", lambda stack: encrypted)
    out = render_into(tmp_path, "--stack", "dev")
    secret = yaml.safe_load((out / "manifests/03-secret-model-mirror-hf-token.yaml").read_text())
    assert secret["stringData"] == {"HF_TOKEN": REDACTED}
    assert "v1:AAAABBBB" not in "".join(rendered(out).values())


def test_command_renders_what_the_library_renders_and_removes_what_it_no_longer_renders(full_render, tmp_path):
    first = rendered(render_into(tmp_path, "--stack", "dev", *EVERY_OBJECT))
    assert first == rendered(full_render), "byte for byte, run after run"
    second = rendered(render_into(tmp_path, "--stack", "dev"))
    assert "manifests/03-secret-model-mirror-hf-token.yaml" not in second
    assert "manifests/05-service-ray-llm-serve-lb.yaml" not in second


def test_gpu_azs_choose_where_the_gpu_nodes_go(tmp_path):
    plan = (render_into(tmp_path, "--stack", "dev", "--gpu-azs", "sa-east-1b,sa-east-1c") / "plan.md").read_text()
    assert "subnets: network-private-sa-east-1b-id; labels: k8s.amazonaws.com/accelerator=nvidia-l4" in plan
    assert "| gpuAz | sa-east-1b |" in plan
    assert "sa-east-1b, sa-east-1c" in plan


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--config", "gpuNodeType=g6.xlarge", "--config", "maxAzs=1"], ["gpuNodeType='g6.xlarge'", "maxAzs='1'"]),
        (
            ["--config", "gpuNodeTyp=g6.8xlarge"],
            ["gpuNodeTyp='g6.8xlarge' is not a setting of this project", "gpuNodeType"],
        ),
        (["--config", "aws:regoin=us-west-2"], ["aws:regoin='us-west-2' is not a setting of the aws provider"]),
        (["--gpu-azs", ""], ["gpuNodeType='g6.8xlarge' is not offered in any Availability Zone"]),
    ],
)
def test_bad_config_fails_like_pulumi_up_and_writes_nothing(args, named, tmp_path, capsys):
    assert main(["--out", str(tmp_path / "out"), *args]) == 1
    stderr = capsys.readouterr().err
    assert stderr.startswith("Invalid stack configuration:")
    for text in named:
        assert text in stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--stack", "nope"], "--stack nope"),
        (["--config", "no-equals-sign"], "--config 'no-equals-sign'"),
        # The flag at fault, not the stack file's secrecy rule the program would report for it.
        (["--secret", "owner=ml"], "--secret owner=...: owner is not a secret setting; pass it with --config"),
        (["--config", "hfToken=hf_x"], "--config hfToken=...: hfToken is a secret setting; pass it with --secret"),
    ],
)
def test_bad_usage_exits_2_naming_the_flag(args, named, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"error: {named}" in err
    assert "hf_x" not in err


def test_a_secret_given_with_its_project_prefix_stays_secret(tmp_path):
    out = render_into(tmp_path, "--stack", "dev", "--secret", f"ray-llm-eks:hfToken={HF_TOKEN}")
    assert "| hfToken | [secret] | --secret |" in (out / "plan.md").read_text()
    assert not [path for path, text in rendered(out).items() if HF_TOKEN in text]


STACK_FILE_PROBLEMS = {
    "bad-yaml": (
        "config:\n  ray-llm-eks:owner: ml-platform\n  ray-llm-eks:maxModelLen: [2048\n",
        "Pulumi.dev.yaml:4: not valid YAML: ",
    ),
    "tab-indent": ("config:\n\tray-llm-eks:owner: ml\n", "Pulumi.dev.yaml:2: not valid YAML: "),
    "config-not-a-mapping": (
        "config:\n  - ray-llm-eks:owner\n",
        "Pulumi.dev.yaml:2: `config:` must map keys to values",
    ),
    "encrypted-plain-setting": (
        "config:\n  ray-llm-eks:owner: ml-platform\n  ray-llm-eks:costCenter:\n    secure: v1:AAAABBBB\n",
        "Pulumi.dev.yaml:3: ray-llm-eks:costCenter is encrypted (secure:) but is not a secret setting; only "
        f"{', '.join(sorted(SECRET_SETTINGS))} may be",
    ),
}


@pytest.mark.parametrize(("text", "expected"), STACK_FILE_PROBLEMS.values(), ids=STACK_FILE_PROBLEMS)
def test_a_stack_file_that_cannot_be_read_is_one_line_naming_file_and_line(
    text, expected, monkeypatch, tmp_path, capsys
):
    (tmp_path / "Pulumi.dev.yaml").write_text(text)
    monkeypatch.setattr(offline, "PROJECT_DIR", tmp_path)
    assert main(["--out", str(tmp_path / "out"), "--stack", "dev"]) == 1
    stderr = capsys.readouterr().err
    assert stderr.startswith(expected)
    assert stderr.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_an_encrypted_secret_setting_is_read_as_a_secret(monkeypatch, tmp_path):
    """Only a key that is no secret is refused encrypted; hfToken may be (and must be) `secure:`."""
    (tmp_path / "Pulumi.dev.yaml").write_text("config:\n  ray-llm-eks:hfToken:\n    secure: v1:AAAABBBB\n")
    monkeypatch.setattr(offline, "PROJECT_DIR", tmp_path)
    assert offline.stack_file("dev").secret_keys == {"ray-llm-eks:hfToken"}


RENDER_COMMAND = re.compile(r"`\./\.venv-tools/bin/python -m tools\.render ([^`]+)`")


@pytest.fixture
def as_shipped(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stack files as a clone has them: no API allow-list (conftest's operator_allow_list undone)."""
    monkeypatch.setattr(offline, "_stack_file_values", SHIPPED_STACK_FILE_VALUES)


def test_the_readmes_render_command_works_as_written_on_a_clone_as_shipped(as_shipped, tmp_path, capsys):
    """Copied from the README as it stands: nothing in it is for the user to fill in first."""
    (arguments,) = RENDER_COMMAND.findall((PROJECT_DIR / "README.md").read_text())
    assert "<" not in arguments
    assert main(shlex.split(arguments.replace("build/dev", str(tmp_path / "out")))) == 0, capsys.readouterr().err


def test_a_clone_without_an_allow_list_renders_on_the_placeholder(as_shipped, tmp_path):
    plan = (render_into(tmp_path, "--stack", "dev") / "plan.md").read_text()
    assert f"public API CIDRs: {ALLOW_LIST_PLACEHOLDER};" in plan
    assert f'| apiPublicAccessCidrs | ["{ALLOW_LIST_PLACEHOLDER}"] | {render.PLACEHOLDER_SOURCE} |' in plan


def test_the_placeholder_is_named_on_stderr_with_the_command_pulumi_up_needs(as_shipped, tmp_path, capsys):
    render_into(tmp_path, "--stack", "dev")
    stderr = capsys.readouterr().err
    assert f"apiPublicAccessCidrs unset: the render stands in the placeholder {ALLOW_LIST_PLACEHOLDER}" in stderr
    assert f"`pulumi up` refuses until you set yours: {API_ALLOW_LIST_COMMAND}" in stderr


def test_the_placeholder_is_named_in_the_plan(as_shipped, tmp_path):
    plan = (render_into(tmp_path, "--stack", "dev") / "plan.md").read_text()
    assert (
        f"**Note:** apiPublicAccessCidrs unset: the render stands in the placeholder {ALLOW_LIST_PLACEHOLDER}" in plan
    )


def test_the_program_still_refuses_the_unset_allow_list(as_shipped):
    """What `pulumi up` runs (load_config, before any resource) is not the render: with no publicAccessCidrs EKS
    opens the public endpoint to 0.0.0.0/0 (https://docs.aws.amazon.com/eks/latest/APIReference/
    API_VpcConfigRequest.html), so the unset key is refused as before."""
    (problem,) = rejection({}, stack="dev").problems
    assert problem.startswith("apiPublicAccessCidrs is invalid: empty: EKS would then open the public API endpoint")


def test_the_placeholder_passes_the_allow_lists_check_where_a_documentation_range_does_not():
    """RFC 5737's ranges are refused for the allow-list (no internet client has one); the placeholder, an internet
    range no host holds (RFC 7526 deprecated the 6to4 relay anycast prefix), is accepted, so the program runs on."""
    assert load_stack_config({"apiPublicAccessCidrs": [ALLOW_LIST_PLACEHOLDER]}).api_public_access_cidrs == (
        ALLOW_LIST_PLACEHOLDER,
    )
    rejection({"apiPublicAccessCidrs": ["192.0.2.0/24"]})


def test_the_users_own_allow_list_is_used_untouched(as_shipped, tmp_path, capsys):
    out = render_into(tmp_path, "--stack", "dev", "--config", 'apiPublicAccessCidrs=["100.24.10.7/32"]')
    plan = (out / "plan.md").read_text()
    assert "public API CIDRs: 100.24.10.7/32;" in plan
    assert ALLOW_LIST_PLACEHOLDER not in plan + capsys.readouterr().err


def test_an_allow_list_in_the_stack_file_is_used_untouched(tmp_path, capsys):
    plan = (render_into(tmp_path, "--stack", "dev") / "plan.md").read_text()
    assert f"public API CIDRs: {', '.join(OPERATOR_CIDRS)};" in plan
    assert ALLOW_LIST_PLACEHOLDER not in plan + capsys.readouterr().err


def test_an_allow_list_given_empty_is_refused_like_pulumi_up(as_shipped, tmp_path, capsys):
    assert main(["--out", str(tmp_path / "out"), "--config", "apiPublicAccessCidrs=[]"]) == 1
    stderr = capsys.readouterr().err
    assert "apiPublicAccessCidrs is invalid: empty" in stderr
    assert ALLOW_LIST_PLACEHOLDER not in stderr


def test_the_offline_option_the_refusal_names_renders_as_copied(as_shipped, tmp_path):
    """The option the empty allow-list's refusal names, run through bash as pasted (tests/test_bad_input.py's
    run_as_copied: curl answering as checkip.amazonaws.com does), renders with the address it gives."""
    (problem,) = rejection({}, stack="dev").problems
    assert OFFLINE_ALLOW_LIST_OPTION in problem
    arguments = run_as_copied(f"render-args {OFFLINE_ALLOW_LIST_OPTION}", tmp_path, program="render-args")
    plan = (render_into(tmp_path / "out", "--stack", "dev", *arguments) / "plan.md").read_text()
    assert "public API CIDRs: 100.24.10.7/32;" in plan


def test_the_helps_config_example_is_accepted(tmp_path):
    assert render.CONFIG_EXAMPLE in render.build_parser().format_help()
    plan = (render_into(tmp_path, "--stack", "dev", "--config", render.CONFIG_EXAMPLE) / "plan.md").read_text()
    assert '| serveSourceCidrs | ["10.0.0.0/8"] | --config |' in plan


# A refusal that rests on an offline table is followed by that table's note: (arguments, the note).
OFFLINE_TABLE_REFUSALS = {
    "unknown-instance-type": (
        ["--config", "gpuNodeType=g7e.8xlarge"],
        "g7e.8xlarge: not in the offline table of instance types (tools/instance_type_facts.py); `pulumi preview` "
        "asks EC2",
    ),
    "type-not-offered": (
        ["--config", "systemNodeType=m6a.xlarge"],
        "m6a.xlarge: not among the types the offline region offers (tools/offline_aws.py OFFERED_INSTANCE_TYPES); "
        "`pulumi preview` asks EC2",
    ),
    "unknown-model": (
        ["--config", "modelSource=acme/unreleased-7b"],
        "acme/unreleased-7b: not in the offline Hugging Face table (tools/offline_models.py HUB_CONFIGS); "
        "`pulumi preview` asks huggingface.co",
    ),
    "gated-model": (
        ["--config", "modelSource=meta-llama/Llama-3.1-8B"],
        "meta-llama/Llama-3.1-8B: gated in the offline Hugging Face table (tools/offline_models.py GATED_REPOS); "
        "`pulumi preview` asks huggingface.co",
    ),
    "s3-object": (
        ["--config", "modelSource=s3://example-models/unmirrored/"],
        "s3://example-models/unmirrored/config.json: not in the offline S3 table (tools/offline_models.py S3_OBJECTS); "
        "`pulumi preview` reads the bucket",
    ),
    "capacity-block": (
        [
            *("--config", "gpuCapacityType=capacity-block", "--config", "capacityReservationId=cr-0aaaaaaaaaaaaaaaa"),
            *("--config", "gpuAz=sa-east-1a", "--config", "gpuNodeType=p5.48xlarge"),
        ],
        "cr-0aaaaaaaaaaaaaaaa: not among the offline account's Capacity Blocks (tools/offline_aws.py CAPACITY_BLOCKS); "
        "`pulumi preview` asks EC2",
    ),
    "quota": (
        # 3 + 2 replicas of 8 GPUs: five p5.48xlarge of 192 vCPUs, 960 against the offline account's 768.
        [
            *("--config", "gpuNodeType=p5.48xlarge", "--config", "tensorParallelSize=8"),
            *("--config", "prefillReplicas=3", "--config", "decodeReplicas=2"),
        ],
        "L-417A185B: 768 vCPUs is the offline account's quota (tools/offline_aws.py DEFAULT_VCPU_QUOTA); "
        "`pulumi preview` asks Service Quotas for yours",
    ),
}


@pytest.mark.parametrize(("args", "note"), OFFLINE_TABLE_REFUSALS.values(), ids=OFFLINE_TABLE_REFUSALS)
def test_a_refusal_from_an_offline_table_says_so_and_who_decides(args, note, tmp_path, capsys):
    assert main(["--out", str(tmp_path / "out"), *args]) == 1
    stderr = capsys.readouterr().err
    assert render.OFFLINE_ANSWERS in stderr
    assert f"\n  - {note}\n" in stderr.split(render.OFFLINE_ANSWERS, 1)[1]


@pytest.mark.parametrize(("args", "note"), OFFLINE_TABLE_REFUSALS.values(), ids=OFFLINE_TABLE_REFUSALS)
def test_a_refusal_from_an_offline_table_is_marked_where_it_is_stated(args, note, tmp_path, capsys):
    """The program's words are the live service's ("not offered", "does not know it"); offline a table said them."""
    assert main(["--out", str(tmp_path / "out"), *args]) == 1
    refusal = capsys.readouterr().err.split(render.OFFLINE_ANSWERS, 1)[0]
    subject = note.split(": ", 1)[0]
    assert [line.endswith(render.DECIDED_BY_A_TABLE) for line in refusal.splitlines() if subject in line] == [True]


@pytest.mark.parametrize("system_node_type", ["t3.large", "c7i.xlarge"])
def test_a_system_node_type_the_offline_tables_cannot_describe_is_refused_not_passed(
    system_node_type, tmp_path, capsys
):
    """The offline region offers only the types tools/instance_type_facts.py describes: a type it offered without a
    description skipped the system node's room check (t3.large passed, m7i.large was refused)."""
    assert main(["--out", str(tmp_path / "out"), "--config", f"systemNodeType={system_node_type}"]) == 1
    stderr = capsys.readouterr().err
    assert f"systemNodeType={system_node_type!r} is not an EC2 instance type offered" in stderr
    assert render.DECIDED_BY_A_TABLE in stderr


def test_a_refusal_that_no_table_answered_has_no_offline_note(tmp_path, capsys):
    """maxAzs is checked against the config alone; the lookups the run made (the quota among them) are not what
    refused it."""
    assert main(["--out", str(tmp_path / "out"), "--config", "maxAzs=9"]) == 1
    assert render.OFFLINE_ANSWERS not in capsys.readouterr().err


def test_the_programs_own_refusal_is_pulumi_ups_without_the_offline_note():
    """The note is the render's: the program's message, which `pulumi up` prints, names no offline table."""
    (problem,) = rejection({"gpuNodeType": "g7e.8xlarge"}).problems
    assert problem.startswith("gpuNodeType='g7e.8xlarge' is invalid: EC2 does not know it")
    assert "offline" not in problem


# --- what the preview says, and what only the mocks answered ---

# The notes the issue found missing from the render (issue 49): each begins so (infra/stack.py, infra/preflight).
PREVIEW_NOTES = (
    "the alert rules run in the in-cluster Prometheus; the alerts go nowhere",
    "Ray's dashboard, Ray client and GCS ask for Ray's token",
    "clusterUpgradeStrategy 'replace': a cluster-spec change",
    "capacity of prefill estimated per engine",
)


@pytest.mark.parametrize("note", PREVIEW_NOTES)
def test_the_previews_notes_reach_stderr_and_the_plan(note, tmp_path, capsys):
    """`pulumi preview` prints the program's pulumi.log.info notes under the stack's diagnostics; the render, which
    stands in for it offline, prints them on stderr and writes them into plan.md."""
    plan = (render_into(tmp_path, "--stack", "dev") / "plan.md").read_text()
    stderr = capsys.readouterr().err
    assert re.search(rf"^info: {re.escape(note)}", stderr, re.MULTILINE)
    assert re.search(rf"^- info: {re.escape(note)}", plan, re.MULTILINE)


def offline_values(text: str) -> set[str]:
    """The words of `text` that hold a value only the offline answers give (tools.offline_aws OFFLINE_PLACEHOLDERS)."""
    markers = [marker for marker, _ in offline_aws.OFFLINE_PLACEHOLDERS]
    return {word.strip("'\",") for word in text.split() for marker in markers if marker in word}


def test_every_rendered_file_names_the_offline_values_it_holds_in_a_header(full_render):
    """docs/operations.md tells GitOps users to apply the manifests: a role ARN of the mocks' account or the mocks'
    ElastiCache host must not reach a cluster unmarked. Each file's header comment lists every such value it holds."""
    marked = 0
    for path in sorted(full_render.rglob("*.yaml")):
        text = path.read_text()
        comments = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
        body = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#"))
        held = offline_values(body)
        assert held <= offline_values(comments), f"{path.name}: unmarked {sorted(held - offline_values(comments))}"
        marked += bool(held)
    # The IRSA service accounts, the store's address, the RayService and its serve config at least.
    assert marked >= 5


def test_a_file_without_offline_values_has_no_placeholder_header(full_render):
    text = (full_render / "manifests" / "01-namespace-inference.yaml").read_text()
    assert not text.startswith("#")
