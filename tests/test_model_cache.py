"""The model cache (infra/serving/model_cache.py): the bucket, the mirror Job, the access scoped to the model's prefix,
and the serve config's loader settings on both sides, as the shipped stacks declare them."""

from __future__ import annotations

import contextlib
import http.server
import io
import json
import threading
from pathlib import Path

import boto3
import pytest
from moto import mock_aws
from ray.llm._internal.common.utils.cloud_utils import is_remote_path
from ray.llm._internal.serve.core.configs.llm_config import LLMConfig

from infra.serving import model_cache
from infra.serving.serve_config import PD_SIDES
from infra.settings.model_sources import split_s3_uri
from serve_ext import model_mirror
from serve_ext.model_mirror import RepoFile
from tests.rayservice_parts import RAYSERVICE, pd_args, worker_group
from tests.schemas import core_object_errors
from tools.offline import run_stack
from tools.offline_aws import ACCOUNT_ID

JOB = "kubernetes:batch/v1:Job"
BUCKET = "aws:s3/bucket:Bucket"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
ROLE = "aws:iam/role:Role"


def cache_uri(run) -> str:
    return run.outputs["modelCacheUri"]


def test_the_cache_is_the_stacks_own_bucket_named_for_account_region_and_cluster(dev):
    bucket, prefix = split_s3_uri(cache_uri(dev))
    assert dev.get(BUCKET, "model-cache-bucket").inputs["bucket"] == bucket
    assert bucket.endswith(f"-{ACCOUNT_ID}-sa-east-1") and len(bucket) <= 63
    assert prefix == "models/Qwen/Qwen3.5-9B"


def test_the_bucket_is_private_encrypted_tagged_and_deleted_with_the_stack(dev):
    """S3 Block Public Access, all four settings (https://docs.aws.amazon.com/AmazonS3/latest/userguide/
    access-control-block-public-access.html); default encryption SSE-S3; forceDestroy, because the provider refuses to
    delete a bucket with objects in it otherwise and `pulumi destroy` would stop on it (pulumi-aws s3.Bucket
    `force_destroy`)."""
    block = dev.get("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", "model-cache-bucket").inputs
    assert all(
        block[key] for key in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
    )
    encryption = dev.get(
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration", "model-cache-bucket"
    ).inputs
    assert encryption["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "AES256"
    bucket = dev.get(BUCKET, "model-cache-bucket")
    assert bucket.inputs["forceDestroy"] is True and not bucket.retain_on_delete
    assert bucket.inputs["tags"]["project"] == "ray-llm-eks"
    # Versioning is never turned on: a refreshed file replaces the old one instead of keeping both.
    assert not dev.of_type("aws:s3/bucketVersioning:BucketVersioning")


def test_the_bucket_is_kept_on_destroy_only_when_asked():
    """`retain_on_delete` leaves the resource in the cloud when Pulumi deletes it from the stack
    (https://www.pulumi.com/docs/iac/concepts/options/retainondelete/); without force_destroy a retained bucket keeps
    its weights whatever the state does."""
    bucket = run_stack({"modelCacheRetainOnDestroy": True}).get(BUCKET, "model-cache-bucket")
    assert bucket.retain_on_delete and bucket.inputs["forceDestroy"] is False


def policy_of(run, name: str) -> dict:
    return json.loads(run.get(ROLE_POLICY, name).inputs["policy"])


def test_the_workers_may_read_the_models_prefix_and_nothing_else(dev):
    """GetObject on the prefix's objects; ListBucket on the bucket only with the s3:prefix condition
    (https://docs.aws.amazon.com/AmazonS3/latest/userguide/amazon-s3-policy-keys.html)."""
    bucket, prefix = split_s3_uri(cache_uri(dev))
    statements = policy_of(dev, "model-cache-reader")["Statement"]
    assert {action for s in statements for action in s["Action"]} == {"s3:GetObject", "s3:ListBucket"}
    get, listing = statements
    assert get["Resource"] == [f"arn:aws:s3:::{bucket}/{prefix}/*"]
    assert listing["Resource"] == [f"arn:aws:s3:::{bucket}"]
    assert listing["Condition"] == {"StringLike": {"s3:prefix": [f"{prefix}/*", prefix]}}


def test_only_the_mirror_may_write_and_only_under_the_prefix(dev):
    bucket, prefix = split_s3_uri(cache_uri(dev))
    writes = [s for s in policy_of(dev, "model-cache-mirror")["Statement"] if "s3:PutObject" in s["Action"]]
    assert [s["Resource"] for s in writes] == [[f"arn:aws:s3:::{bucket}/{prefix}/*"]]
    assert not any("Put" in a for s in policy_of(dev, "model-cache-reader")["Statement"] for a in s["Action"])


def trust_subject(run, role: str) -> str:
    (statement,) = json.loads(run.get(ROLE, role).inputs["assumeRolePolicy"])["Statement"]
    (subject,) = (value for key, value in statement["Condition"]["StringEquals"].items() if key.endswith(":sub"))
    return subject


def test_each_role_is_assumed_by_its_one_service_account(dev):
    assert trust_subject(dev, "model-cache-reader") == "system:serviceaccount:inference:model-reader"
    assert trust_subject(dev, "model-cache-mirror") == "system:serviceaccount:model-cache:model-mirror"


def test_the_gpu_workers_run_as_the_reader(dev):
    account = dev.get("kubernetes:core/v1:ServiceAccount", "serving-worker-service-account").inputs["metadata"]
    assert worker_group(dev)["template"]["spec"]["serviceAccountName"] == account["name"] == "model-reader"
    assert "eks.amazonaws.com/role-arn" in account["annotations"]


def test_both_sides_load_the_cached_copy_through_rays_cloud_loading(dev):
    """Ray 2.58 takes a remote model_source (is_remote_path) as a CloudMirrorConfig and downloads it on each node
    (ray/llm/_internal/serve/engines/vllm/vllm_models.py from_llm_config); no load_format is set, since a
    streaming one makes Ray download nothing and hand vLLM the model_id (llm_config.py get_or_create_callback)."""
    for side in PD_SIDES:
        config = LLMConfig.model_validate(pd_args(dev)[f"{side}_config"])
        assert config.model_loading_config.model_source == cache_uri(dev)
        assert is_remote_path(config.model_loading_config.model_source)
        assert "load_format" not in config.engine_kwargs


def test_the_rayservice_waits_for_the_mirror(dev):
    """pulumi-kubernetes waits for a Job to complete (provider/pkg/await/job.go: a `Complete` condition, and a
    `Failed` one fails the update at once), so a dependency on it holds the RayService until the weights are in."""
    job = dev.get(JOB, "model-cache-mirror")
    assert job.urn in dev.get(RAYSERVICE, "serving-rayservice").dependencies
    annotations = job.inputs["metadata"]["annotations"]
    assert int(annotations["pulumi.com/timeoutSeconds"]) > 10 * 60  # the provider's Job default is 10 minutes


def test_a_failed_mirror_is_replaced_by_the_next_pulumi_up(dev):
    """pulumi-kubernetes awaits a Job again on every update and fails at once on a Failed one, unless the Job has
    `pulumi.com/replaceUnready: "true"`, which replaces an unready Job instead (provider/pkg/gen/additionalComments.go;
    provider/pkg/provider/provider.go, the replaceUnready check in Diff)."""
    job = dev.get(JOB, "model-cache-mirror")
    assert job.inputs["metadata"]["annotations"]["pulumi.com/replaceUnready"] == "true"


def test_the_mirror_runs_again_only_for_another_model(dev):
    same = run_stack({"maxModelLen": 8192}).get(JOB, "model-cache-mirror").inputs["metadata"]["name"]
    other = run_stack({"modelSource": "Qwen/Qwen3-8B"}).get(JOB, "model-cache-mirror").inputs["metadata"]["name"]
    assert dev.get(JOB, "model-cache-mirror").inputs["metadata"]["name"] == same != other


def test_the_hub_token_reaches_the_mirror_only_from_a_secret():
    run = run_stack({"hfToken": "hf_secret"}, secret_keys=("hfToken",))
    secret = run.get("kubernetes:core/v1:Secret", "model-cache-hf-token")
    assert "stringData" in secret.secret_inputs
    (container,) = run.get(JOB, "model-cache-mirror").inputs["spec"]["template"]["spec"]["containers"]
    (token,) = [e for e in container["env"] if e["name"] == "HF_TOKEN"]
    assert token["valueFrom"]["secretKeyRef"]["name"] == model_cache.HF_TOKEN_SECRET
    assert "hf_secret" not in json.dumps(container)


def test_the_job_ships_the_mirror_script_it_runs(dev):
    script = dev.get("kubernetes:core/v1:ConfigMap", "model-cache-script").inputs["data"]
    assert script == {"model_mirror.py": Path(model_mirror.__file__).read_text()}


def test_a_users_own_s3_source_is_read_as_it_is_with_no_bucket_and_no_mirror():
    run = run_stack({"modelSource": "s3://example-models/qwen3.5-9b"})
    assert not run.of_type(BUCKET) and not run.of_type(JOB)
    assert json.loads(run.get(ROLE_POLICY, "model-cache-reader").inputs["policy"])["Statement"][0]["Resource"] == [
        "arn:aws:s3:::example-models/qwen3.5-9b/*"
    ]
    assert pd_args(run)["decode_config"]["model_loading_config"]["model_source"] == "s3://example-models/qwen3.5-9b"


def test_with_the_cache_off_the_workers_read_the_hub_as_before():
    run = run_stack({"modelCache": False})
    assert not run.of_type("ray-llm-eks:serving:ModelCache")
    assert pd_args(run)["prefill_config"]["model_loading_config"]["model_source"] == "Qwen/Qwen3.5-9B"
    assert "serviceAccountName" not in worker_group(run)["template"]["spec"]


def test_the_mirror_job_is_a_valid_batch_v1_job():
    job = model_cache.build_mirror_job("Qwen/Qwen3.5-9B", "s3://b/models/Qwen/Qwen3.5-9B", "img:1", True)
    assert core_object_errors(job) == []


# --- the mirror script, against moto's S3 (in process) ---

URI = "s3://mirror-test-bucket/models/org/model"
FILES = [RepoFile("config.json", 3, "blob-1"), RepoFile("model.safetensors", 5, "sha-2")]


@pytest.fixture
def s3():
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="mirror-test-bucket")
        yield client


def hub(fetched: list[str], short_by: int = 0):
    """The Hub's downloads, each file's bytes (less `short_by`), recording what was opened."""

    def open_file(repo_file: RepoFile):
        fetched.append(repo_file.name)
        return contextlib.nullcontext(io.BytesIO(b"x" * (repo_file.size - short_by)))

    return open_file


def test_the_mirror_copies_each_file_and_names_the_commit_last(s3):
    fetched: list[str] = []
    model_mirror.mirror(FILES, "abc123", hub(fetched), s3, URI, log=lambda line: None)
    assert sorted(fetched) == ["config.json", "model.safetensors"]
    body = s3.get_object(Bucket="mirror-test-bucket", Key="models/org/model/hash")["Body"].read()
    assert body == b"abc123"
    head = s3.head_object(Bucket="mirror-test-bucket", Key="models/org/model/model.safetensors")
    assert head["Metadata"][model_mirror.DIGEST_KEY] == "sha-2"


def test_a_second_run_copies_only_what_changed(s3):
    model_mirror.mirror(FILES, "abc123", hub([]), s3, URI, log=lambda line: None)
    fetched: list[str] = []
    changed = [FILES[0], RepoFile("model.safetensors", 5, "sha-3")]
    uploaded = model_mirror.mirror(changed, "def456", hub(fetched), s3, URI, log=lambda line: None)
    assert fetched == ["model.safetensors"] and uploaded == 5


def test_a_download_short_of_the_files_size_leaves_no_object_and_no_commit(s3):
    """A dropped connection must not leave a short object for the next run to skip as copied: the upload is aborted
    and the `hash` Ray reads is not written."""
    with pytest.raises(model_mirror.ShortCopy):
        model_mirror.mirror(FILES, "abc123", hub([], short_by=1), s3, URI, log=lambda line: None)
    assert "Contents" not in s3.list_objects_v2(Bucket="mirror-test-bucket")


def test_a_shard_streams_to_the_bucket_in_parts_whole(s3):
    """Above boto3's 8 MiB multipart threshold the stream is uploaded part by part, each read from the download."""
    big = [RepoFile("model.safetensors", 9 * 2**20, "sha-2")]
    model_mirror.mirror(big, "abc123", hub([]), s3, URI, log=lambda line: None)
    head = s3.head_object(Bucket="mirror-test-bucket", Key="models/org/model/model.safetensors")
    assert head["ContentLength"] == 9 * 2**20 and head["Metadata"][model_mirror.DIGEST_KEY] == "sha-2"
    assert "-" in head["ETag"]  # a multipart object's ETag ends in -<parts>


def test_a_short_download_of_a_multipart_file_leaves_no_upload_behind(s3):
    """A shard is uploaded in parts (boto3's 8 MiB multipart threshold, s3transfer's TransferConfig): the short read
    fails the transfer, which aborts the multipart upload, so neither an object nor its parts are left (billed)."""
    big = [RepoFile("model.safetensors", 9 * 2**20, "sha-2")]
    with pytest.raises(model_mirror.ShortCopy):
        model_mirror.mirror(big, "abc123", hub([], short_by=1), s3, URI, log=lambda line: None)
    assert "Contents" not in s3.list_objects_v2(Bucket="mirror-test-bucket")
    assert "Uploads" not in s3.list_multipart_uploads(Bucket="mirror-test-bucket")


def test_the_mirror_copies_files_at_once(s3):
    """One HTTP flow per file from the Hub: the files are copied side by side, so the mirror is not one flow's rate.
    Each download here lets its first byte go only once both are open, which a copy of one file at a time never is."""
    both_open = threading.Barrier(2, timeout=10)

    def open_file(repo_file: RepoFile):
        both_open.wait()
        return contextlib.nullcontext(io.BytesIO(b"x" * repo_file.size))

    assert model_mirror.mirror(FILES, "abc123", open_file, s3, URI, log=lambda line: None, parallel=2) == 8


def test_the_hubs_token_does_not_follow_its_redirect():
    """The Hub answers a file's URL with a redirect to its CDN, whose URL is signed; the token goes to the Hub only."""
    seen: dict[str, str | None] = {}

    class Hub(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen[self.path] = self.headers.get("Authorization")
            if self.path == "/resolve":
                self.send_response(302)
                self.send_header("Location", "/cdn")
                self.end_headers()
            else:
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/resolve"
        with model_mirror.open_url(url, {"authorization": "Bearer hf_x", "user-agent": "mirror"}) as body:
            assert body.read() == b"ok"
    finally:
        server.shutdown()
    assert seen == {"/resolve": "Bearer hf_x", "/cdn": None}


def test_the_mirror_logs_its_progress(s3):
    lines: list[str] = []
    model_mirror.mirror(FILES, "abc123", hub([]), s3, URI, log=lines.append)
    assert [line for line in lines if line.startswith("progress")][-1].startswith("progress 0.00/0.00 GB (100%)")


def test_the_job_manifest_names_what_the_script_reads():
    (container,) = model_cache.build_mirror_job("o/m", URI, "img:1", False)["spec"]["template"]["spec"]["containers"]
    assert {e["name"] for e in container["env"]} >= {"MODEL_REPO", "MODEL_CACHE_URI"}
    assert container["command"][-1].endswith(Path(model_mirror.__file__).name)


class HeadRecorder:
    """The S3 client, recording each HeadObject: the mirror's role may HEAD only keys that exist (a missing key is a
    403 without s3:ListBucket for the request, https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadObject.html)."""

    def __init__(self, client) -> None:
        self._client, self.heads = client, []

    def head_object(self, **kwargs):
        self.heads.append(kwargs["Key"])
        return self._client.head_object(**kwargs)

    def __getattr__(self, name):
        return getattr(self._client, name)


def test_the_mirror_reads_digests_only_of_objects_it_listed(s3):
    recorder = HeadRecorder(s3)
    model_mirror.mirror(FILES, "abc123", hub([]), recorder, URI, log=lambda line: None)
    assert recorder.heads == []
    model_mirror.mirror(FILES, "abc123", hub([]), recorder, URI, log=lambda line: None)
    assert sorted(recorder.heads) == sorted(
        f"models/org/model/{name}" for name in ("config.json", "model.safetensors", "hash")
    )


def names(files):
    return sorted(f.name for f in files)


def test_only_the_weights_vllms_default_loader_reads_are_mirrored():
    """vLLM 0.26's default loader globs the top level for *.safetensors, else *.bin, else *.pt
    (vllm/model_executor/model_loader/default_loader.py, `_prepare_weights`); Ray downloads the whole prefix."""
    repo = [
        RepoFile(name, 1, name)
        for name in (
            "config.json",
            "tokenizer.json",
            "model-00001-of-00002.safetensors",
            "model-00002-of-00002.safetensors",
            "pytorch_model.bin",
            "original/consolidated.00.pth",
            "original/params.json",
        )
    ]
    assert names(model_mirror.loaded_files(repo)) == [
        "config.json",
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
        "original/params.json",
        "tokenizer.json",
    ]


def test_a_repo_of_bin_weights_keeps_them():
    repo = [RepoFile(name, 1, name) for name in ("config.json", "pytorch_model.bin", "original/model.pth")]
    assert names(model_mirror.loaded_files(repo)) == ["config.json", "pytorch_model.bin"]


def test_the_mirror_takes_no_room_on_the_node():
    """It streams each file from the Hub to S3, so its pod mounts only its script: nothing competes with the DLC
    image for the system node's root volume."""
    spec = model_cache.build_mirror_job("o/m", URI, "img:1", False)["spec"]["template"]["spec"]
    assert [volume["name"] for volume in spec["volumes"]] == ["script"]
