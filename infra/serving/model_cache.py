"""The model cache: the weights in the stack's own S3 bucket, mirrored once, read by the GPU workers only.

Workers load through Ray Serve LLM 2.58's cloud loading with an IRSA role that reads the prefix only, and the mirror
is a Job named by a digest of what it copies, which `pulumi up` waits for; why each, with the sources:
docs/model-cache.md#model-cache-and-cold-start (each rule is tested in tests/test_model_cache.py)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
from pulumi.errors import InputPropertyErrorDetails

from infra import PROJECT_DIR
from infra.cluster.eks import Cluster
from infra.cluster.irsa import service_account_role
from infra.components import Children, problem, raise_input_errors
from infra.kube.namespaces import MODEL_CACHE_NAMESPACE as NAMESPACE
from infra.kube.pod_resources import MIRROR_RESOURCES
from infra.kube.pod_security import CONTAINER_SECURITY, MODEL_CACHE_LEVEL, pod_security_labels
from infra.kube.scheduling import SYSTEM_NODE_SELECTOR
from infra.serving.rayservice import HF_TOKEN_KEY, hf_token_env
from infra.settings.model_sources import s3_location_reason, split_s3_uri

MIRROR_SERVICE_ACCOUNT = "model-mirror"
# The GPU workers' service account, in the serving namespace: read-only on the model's prefix.
READER_SERVICE_ACCOUNT = "model-reader"
HF_TOKEN_SECRET = "model-mirror-hf-token"
SCRIPT_CONFIGMAP = "model-mirror-script"
SCRIPT = PROJECT_DIR / "serve_ext" / "model_mirror.py"
SCRIPT_MOUNT = "/opt/model-mirror"
CACHE_PREFIX = "models"
# 19 GB from the Hub at a few hundred MB/s is minutes; the provider's own Job default is 10 minutes.
MIRROR_TIMEOUT_SECONDS = 2 * 60 * 60
# A failed pod is retried where it stopped: the script skips what is already in the bucket.
MIRROR_BACKOFF_LIMIT = 6
# S3 bucket names: 3-63 characters (https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html).
MAX_BUCKET_NAME = 63


def cache_bucket_name(cluster_name: str, account_id: str, region: str) -> str:
    """Globally unique and fixed per cluster, so the serve config can name it before the bucket exists: the
    account and region, and a digest of the cluster name (which may hold upper case and '_', unlike a bucket)."""
    digest = hashlib.sha256(cluster_name.encode()).hexdigest()[:8]
    name = f"llm-models-{digest}-{account_id}-{region}"
    assert len(name) <= MAX_BUCKET_NAME, name
    return name


def cache_uri(bucket: str, repo: str) -> str:
    return f"s3://{bucket}/{CACHE_PREFIX}/{repo}"


def reader_policy(partition: str, bucket: str, prefix: str, adapter_prefixes: tuple[str, ...] = ()) -> dict[str, Any]:
    """Read the objects under `prefix/` and list only that prefix, and the same for each model's LoRA adapters' prefix,
    as Ray's S3 loading reads them (docs/model-cache.md#model-cache-and-cold-start, "Access")."""
    prefixes = (prefix, *adapter_prefixes)
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["s3:GetObject"],
                "Resource": [f"arn:{partition}:s3:::{bucket}/{each}/*" for each in prefixes],
            },
            {
                "Effect": "Allow",
                "Action": ["s3:ListBucket"],
                "Resource": [f"arn:{partition}:s3:::{bucket}"],
                "Condition": {"StringLike": {"s3:prefix": [form for each in prefixes for form in (f"{each}/*", each)]}},
            },
        ],
    }


def mirror_policy(partition: str, bucket: str, prefix: str) -> dict[str, Any]:
    """The reader's rights plus writing under `prefix/` (a multipart upload is PutObject, and abandoning one is
    AbortMultipartUpload: https://docs.aws.amazon.com/AmazonS3/latest/userguide/mpuAndPermissions.html)."""
    policy = reader_policy(partition, bucket, prefix)
    policy["Statement"].append(
        {
            "Effect": "Allow",
            "Action": ["s3:PutObject", "s3:AbortMultipartUpload"],
            "Resource": [f"arn:{partition}:s3:::{bucket}/{prefix}/*"],
        }
    )
    return policy


def mirror_job_name(repo: str, uri: str) -> str:
    """A new name whenever what is copied changes (the Job's template is immutable, and a new name is a new run)."""
    return f"model-mirror-{hashlib.sha256(f'{repo} {uri}'.encode()).hexdigest()[:10]}"


def build_mirror_job(
    repo: str, uri: str, image: str, with_hf_token: bool, namespace: str = NAMESPACE
) -> dict[str, Any]:
    """The batch/v1 Job that copies the Hub repo `repo` to `uri`, on a system node, as the mirror account."""
    env: list[dict[str, Any]] = [
        {"name": "MODEL_REPO", "value": repo},
        {"name": "MODEL_CACHE_URI", "value": uri},
        # Progress lines reach `kubectl logs` as they are printed.
        {"name": "PYTHONUNBUFFERED", "value": "1"},
    ]
    if with_hf_token:
        env.append(hf_token_env(HF_TOKEN_SECRET))
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": mirror_job_name(repo, uri),
            "namespace": namespace,
            # A Job that failed (a Hub outage, a missing token, the timeout) is replaced on the next `pulumi up`
            # and goes on where it stopped; without this the provider awaits the failed one again and the update
            # fails at once, every time (pulumi-kubernetes provider/pkg/gen/additionalComments.go, replaceUnready).
            "annotations": {
                "pulumi.com/timeoutSeconds": str(MIRROR_TIMEOUT_SECONDS),
                "pulumi.com/replaceUnready": "true",
            },
        },
        "spec": {
            "backoffLimit": MIRROR_BACKOFF_LIMIT,
            "template": {
                "spec": {
                    "serviceAccountName": MIRROR_SERVICE_ACCOUNT,
                    # No Kubernetes API call: S3 credentials come through EKS's IRSA webhook, which mounts its own
                    # token (aws-iam-token; github.com/aws/amazon-eks-pod-identity-webhook README).
                    "automountServiceAccountToken": False,
                    "restartPolicy": "Never",
                    "nodeSelector": dict(SYSTEM_NODE_SELECTOR),
                    "containers": [
                        {
                            "name": "mirror",
                            "image": image,
                            "command": ["python", f"{SCRIPT_MOUNT}/{SCRIPT.name}"],
                            "env": env,
                            "resources": MIRROR_RESOURCES,
                            # The image's own user (infra/kube/pod_security.py MODEL_CACHE_LEVEL), nothing more.
                            "securityContext": dict(CONTAINER_SECURITY),
                            # No volume to work in: the script streams each file from the Hub to S3.
                            "volumeMounts": [{"name": "script", "mountPath": SCRIPT_MOUNT, "readOnly": True}],
                        }
                    ],
                    "volumes": [{"name": "script", "configMap": {"name": SCRIPT_CONFIGMAP}}],
                }
            },
        },
    }


@dataclass(frozen=True)
class ModelCacheArgs:
    """Where the model comes from and where the workers read it.

    `repo` set: a Hugging Face repo mirrored into the bucket `uri` names (created here, so a bucket of this
    component's own). `repo` None: `uri` is the user's own S3 source, which is only granted to the workers."""

    uri: str  # s3://<bucket>/<prefix> the workers read (cache_uri for a mirrored repo)
    namespace: str  # the Ray pods' namespace, where the workers' account (READER_SERVICE_ACCOUNT) is
    partition: str  # the AWS partition of the S3 ARNs in the policies, e.g. "aws"
    image: str = ""  # the mirror's image, pinned (the DLC has huggingface_hub and boto3); needed with `repo`
    repo: str | None = None  # a Hugging Face repo id, owner/name, to mirror into `uri`
    mirror_namespace: str = NAMESPACE  # the namespace the mirror Job, its account and Secret go in (created here)
    # Keep the bucket and its weights in the account on `pulumi destroy` (out of the state); else it is deleted with
    # them: the provider refuses to delete a bucket with objects unless force_destroy (pulumi-aws s3.Bucket).
    retain_bucket_on_destroy: bool = False
    hf_token: pulumi.Input[str] | None = None  # for a gated repo: the mirror reads it from its own Secret
    tags: Mapping[str, str] = field(default_factory=dict)  # on the bucket and the IAM roles
    # Key prefixes in the bucket the workers also read: the LoRA adapters of the aggregated models.
    adapter_prefixes: tuple[str, ...] = ()


def model_cache_args_errors(args: ModelCacheArgs) -> list[InputPropertyErrorDetails]:
    """The bucket and prefix the workers' role is granted, by the settings' own rule."""
    reason = s3_location_reason(args.uri)
    return [problem("uri", f"{args.uri!r} is invalid: {reason}")] if reason else []


class ModelCache(pulumi.ComponentResource):
    """The bucket (when mirroring), the mirror Job and its account, and the workers' read-only account. The mirror's
    Kubernetes objects have fixed names in `mirror_namespace`, so two instances mirroring in one cluster each need a
    namespace of their own."""

    reader_role_arn: pulumi.Output[str]
    mirror: pulumi.Resource | None

    def __init__(
        self, name: str, args: ModelCacheArgs, cluster: Cluster, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        raise_input_errors("ModelCache", model_cache_args_errors(args))
        super().__init__("ray-llm-eks:serving:ModelCache", name, None, opts)
        self._children = Children(self, name)
        bucket_name, prefix = split_s3_uri(args.uri)
        reader = self._role(
            "reader",
            args,
            cluster,
            args.namespace,
            READER_SERVICE_ACCOUNT,
            reader_policy(args.partition, bucket_name, prefix, args.adapter_prefixes),
        )
        self.reader_role_arn = reader.arn
        self.mirror = None
        if args.repo is not None:
            self.mirror = self._mirror(args, args.repo, cluster, bucket_name, prefix)
        self.register_outputs({})

    def _role(
        self, role: str, args: ModelCacheArgs, cluster: Cluster, namespace: str, account: str, policy: dict[str, Any]
    ) -> aws.iam.Role:
        """An IAM role only `namespace/account` may assume (IRSA), with `policy` inline."""
        children = self._children
        iam_role = service_account_role(children.name(role), cluster, namespace, account, args.tags, children.opts())
        aws.iam.RolePolicy(children.name(role), role=iam_role.id, policy=json.dumps(policy), opts=children.opts())
        return iam_role

    def _mirror(
        self, args: ModelCacheArgs, repo: str, cluster: Cluster, bucket_name: str, prefix: str
    ) -> k8s.batch.v1.Job:
        children = self._children
        bucket = self._bucket(args, bucket_name)
        writer = self._role(
            "mirror",
            args,
            cluster,
            args.mirror_namespace,
            MIRROR_SERVICE_ACCOUNT,
            mirror_policy(args.partition, bucket_name, prefix),
        )
        namespace = k8s.core.v1.Namespace(
            children.name("namespace"),
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=args.mirror_namespace, labels=pod_security_labels(MODEL_CACHE_LEVEL)
            ),
            opts=children.opts(provider=cluster.provider),
        )
        in_namespace = children.opts(provider=cluster.provider, depends_on=[namespace])
        deps: list[pulumi.Resource] = [
            bucket,
            k8s.core.v1.ServiceAccount(
                children.name("mirror"),
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=MIRROR_SERVICE_ACCOUNT,
                    namespace=args.mirror_namespace,
                    annotations={"eks.amazonaws.com/role-arn": writer.arn},
                ),
                opts=in_namespace,
            ),
            k8s.core.v1.ConfigMap(
                children.name("script"),
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=SCRIPT_CONFIGMAP,
                    namespace=args.mirror_namespace,
                    labels={"app.kubernetes.io/name": "model-mirror"},
                ),
                data={SCRIPT.name: SCRIPT.read_text()},
                opts=in_namespace,
            ),
        ]
        if args.hf_token is not None:
            deps.append(
                k8s.core.v1.Secret(
                    children.name("hf-token"),
                    metadata=k8s.meta.v1.ObjectMetaArgs(name=HF_TOKEN_SECRET, namespace=args.mirror_namespace),
                    type="Opaque",
                    string_data={HF_TOKEN_KEY: pulumi.Output.secret(args.hf_token)},
                    opts=in_namespace,
                )
            )
        job = build_mirror_job(repo, args.uri, args.image, args.hf_token is not None, args.mirror_namespace)
        return k8s.batch.v1.Job(
            children.name("mirror"),
            metadata=job["metadata"],
            spec=job["spec"],
            opts=children.opts(provider=cluster.provider, depends_on=deps, delete_before_replace=True),
        )

    def _bucket(self, args: ModelCacheArgs, bucket_name: str) -> aws.s3.Bucket:
        """The cache's bucket: private, encrypted, emptied by `pulumi destroy` unless it is to be kept."""
        children = self._children
        bucket = aws.s3.Bucket(
            children.name("bucket"),
            bucket=bucket_name,
            force_destroy=not args.retain_bucket_on_destroy,
            tags=dict(args.tags),
            opts=children.opts(retain_on_delete=args.retain_bucket_on_destroy),
        )
        in_bucket = pulumi.ResourceOptions(parent=bucket)
        aws.s3.BucketPublicAccessBlock(
            children.name("bucket"),
            bucket=bucket.id,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
            opts=in_bucket,
        )
        aws.s3.BucketServerSideEncryptionConfiguration(
            children.name("bucket"),
            bucket=bucket.id,
            rules=[
                aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                    apply_server_side_encryption_by_default=aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
                        sse_algorithm="AES256"
                    )
                )
            ],
            opts=in_bucket,
        )
        return bucket
