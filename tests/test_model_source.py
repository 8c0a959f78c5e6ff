"""The model preflight: a model source the engines could not fetch or load stops `pulumi up` before the
RayService changes, with what to do; the offline Hub and S3 answer as huggingface.co and pulumi-aws do."""

from __future__ import annotations

import ast

import pytest

from infra.preflight.checks import PreflightError
from infra.serving.model_source import (
    HUB,
    MAX_LENGTH_KEYS,
    REGISTRY,
    ModelSourceError,
    model_max_length,
    read_model,
    vllm_architectures,
)
from tests.rayservice_parts import RAYSERVICE
from tools.offline import run_stack
from tools.offline_models import HUB_CONFIGS, hub_fetch

CONVERTOR = REGISTRY.parent / "model_arch_config_convertor.py"


def model_warnings(source, max_model_len, token, **lookups) -> list[str]:
    return list(read_model(source, max_model_len, token, False, **lookups).warnings)


def refused(source: str, max_model_len: int = 4096, token: str | None = None) -> str:
    with pytest.raises(ModelSourceError) as caught:
        model_warnings(source, max_model_len, token, fetch=hub_fetch)
    return str(caught.value)


def test_the_default_model_passes():
    assert model_warnings("Qwen/Qwen3.5-9B", 4096, None, fetch=hub_fetch) == []


def test_a_repository_the_hub_does_not_show_is_refused_with_the_token_hint():
    """huggingface.co answers 401 with `X-Error-Code: RepoNotFound` for a missing repo and for a private one the
    caller cannot see (huggingface_hub `utils/_http.py` `hf_raise_for_status`: "401 is misleading as it is returned
    for private and gated repos if user is not authenticated, missing repos")."""
    message = refused("Qwen/Qwen3.5-9B-typo")
    assert "modelSource='Qwen/Qwen3.5-9B-typo' is not a Hugging Face repository this stack can read" in message
    assert "pulumi config set --secret hfToken" in message


def test_a_gated_repository_without_a_token_is_refused():
    """`X-Error-Code: GatedRepo` (huggingface_hub `hf_raise_for_status`: GatedRepoError)."""
    message = refused("meta-llama/Llama-3.1-8B")
    assert "is a gated repository: accept its conditions on huggingface.co" in message


def test_a_gated_repository_with_a_token_passes():
    assert model_warnings("meta-llama/Llama-3.1-8B", 8192, "hf_test", fetch=hub_fetch) == []


def test_the_hub_is_asked_for_the_config_with_the_token_as_bearer():
    """huggingface_hub's file URL (`constants.HUGGINGFACE_CO_URL_TEMPLATE`, `{repo_id}/resolve/{revision}/{filename}`)
    and its `Authorization: Bearer <token>` header (`utils/_headers.py`)."""
    asked = []

    def fetch(url, headers):
        asked.append((url, dict(headers)))
        return hub_fetch(url, headers)

    model_warnings("meta-llama/Llama-3.1-8B", 8192, "hf_test", fetch=fetch)
    assert asked[0] == (f"{HUB}/meta-llama/Llama-3.1-8B/resolve/main/config.json", {"Authorization": "Bearer hf_test"})
    assert all(headers["Authorization"] == "Bearer hf_test" for _, headers in asked)


def test_a_context_longer_than_the_model_is_refused():
    """vLLM 0.26 `vllm/config/model.py` `_get_and_verify_max_len` raises "User-specified max_model_len (…) is
    greater than the derived max_model_len" unless VLLM_ALLOW_LONG_MAX_MODEL_LEN is set; Qwen3-8B's config.json
    has 40960 positions and no RoPE scaling."""
    message = refused("Qwen/Qwen3-8B", max_model_len=65536)
    assert message == (
        "maxModelLen=65536 is more than modelSource='Qwen/Qwen3-8B' allows (40960 tokens in its config.json): "
        "vLLM refuses to start; allowed is at most that"
    )


def test_rope_scaling_leaves_the_length_to_vllm():
    """vLLM multiplies the derived length by the RoPE scaling factor (`_get_and_verify_max_len`), which this check
    does not redo: Llama 3.1's 131072 positions come with a factor 8 over 8192."""
    assert model_max_length(HUB_CONFIGS["meta-llama/Llama-3.1-8B"]) is None


def test_a_multimodal_models_limit_is_its_text_configs():
    """vLLM derives the length from `hf_text_config` (model_arch_config_convertor.py)."""
    assert model_max_length(HUB_CONFIGS["Qwen/Qwen3.5-9B"]) == 262144


def test_the_length_keys_are_vllms_own():
    """The keys `derive_max_model_len_and_key` reads, in vLLM 0.26.0's order (vendored convertor)."""
    tree = ast.parse(CONVERTOR.read_text())
    lists = [
        [element.value for element in node.value.elts]
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "possible_keys" for t in node.targets)
    ]
    assert lists == [list(MAX_LENGTH_KEYS)]


def test_vllms_registry_is_read_from_its_own_source():
    """vLLM 0.26.0 `vllm/model_executor/models/registry.py` maps each architecture name in its `_…_MODELS` dicts."""
    architectures = vllm_architectures()
    assert {"Qwen3_5ForConditionalGeneration", "LlamaForCausalLM", "Qwen3ForCausalLM"} <= architectures
    assert "_VLLM_MODELS" not in architectures


def test_an_architecture_vllm_does_not_register_is_a_warning():
    def fetch(url, headers):
        answer = hub_fetch(url.replace("acme/custom", "Qwen/Qwen3-8B"), headers)
        return answer.__class__(answer.status, answer.headers, b'{"architectures": ["AcmeForCausalLM"]}')

    (warning,) = model_warnings("acme/custom", 4096, None, fetch=fetch)
    assert "vLLM 0.26 registers none of ['AcmeForCausalLM']; it would try its Transformers backend" in warning


def test_the_hub_unreachable_says_what_network_the_check_needs():
    def offline(url, headers):
        raise OSError("Name or service not known")

    message = refused_with(offline)
    assert (
        "the check needs HTTPS to huggingface.co from this machine (set modelPreflight to false to skip it)" in message
    )


def refused_with(fetch) -> str:
    with pytest.raises(ModelSourceError) as caught:
        model_warnings("Qwen/Qwen3.5-9B", 4096, None, fetch=fetch)
    return str(caught.value)


def test_an_s3_source_is_read_with_the_deploying_identity():
    run = run_stack({"modelSource": "s3://example-models/qwen3.5-9b"})
    assert run.get(RAYSERVICE, "serving-rayservice")


def test_a_missing_s3_config_stops_the_program_before_any_resource():
    """S3's NoSuchKey reaches the program as a failed getObject invoke."""
    with pytest.raises(PreflightError, match=r"s3://example-models/missing/config.json cannot be read") as caught:
        run_stack({"modelSource": "s3://example-models/missing"})
    assert caught.value.declared_resources == []


def test_an_s3_config_stored_as_binary_is_a_warning():
    """pulumi-aws returns an object's body only for text and JSON content types (pulumi_aws/s3/get_object.py)."""
    (warning,) = model_warnings("s3://example-models/bin", 4096, None, read_s3=lambda bucket, key: "")
    assert "config.json exists but is not stored as text or JSON" in warning


def test_a_path_in_the_image_is_not_checked():
    (warning,) = model_warnings("/models/qwen", 4096, None, fetch=hub_fetch)
    assert "is a path inside the image: not checked before deploying" in warning


def test_a_bad_model_stops_the_program_before_any_resource():
    with pytest.raises(PreflightError) as caught:
        run_stack({"modelSource": "Qwen/Qwen3.5-9B-typo"})
    assert caught.value.declared_resources == []


def test_the_preflight_can_be_turned_off():
    run = run_stack({"modelSource": "Qwen/Qwen3.5-9B-typo", "modelPreflight": False})
    assert run.get(RAYSERVICE, "serving-rayservice")


def _redirect(url: str, to: str, headers: dict[str, str]):
    import urllib.request

    from infra.serving.model_source import _KeepHeadersOnRedirect

    request = urllib.request.Request(url, headers=headers)
    return _KeepHeadersOnRedirect().redirect_request(request, None, 302, "Found", {}, to)


def test_a_range_read_keeps_its_range_through_the_hubs_redirect_to_its_cdn():
    """The Hub answers `resolve/main/<shard>` with a redirect to the CDN that serves the bytes; without the Range
    there a header read fetches the whole shard (urllib.request's redirect_request copies `req.headers`, not
    unredirected ones). The token stays with huggingface.co: httpx, huggingface_hub's client, drops Authorization
    when a redirect changes origin (`Client._redirect_headers`)."""
    shard = f"{HUB}/Qwen/Qwen3.5-9B/resolve/main/model-00001-of-00004.safetensors"
    cdn = "https://cas-bridge.xethub.hf.co/xet-bridge-us/abc?X-Amz-Signature=x"
    redirected = _redirect(shard, cdn, {"Authorization": "Bearer hf_test", "Range": "bytes=0-100000"})
    assert redirected.get_header("Range") == "bytes=0-100000"
    assert redirected.get_header("Authorization") is None


def test_a_redirect_on_the_hub_itself_keeps_the_token():
    """A renamed repo redirects within huggingface.co; a gated or private repo needs the token there too."""
    redirected = _redirect(
        f"{HUB}/old/name/resolve/main/config.json",
        f"{HUB}/new/name/resolve/main/config.json",
        {"Authorization": "Bearer hf_test"},
    )
    assert redirected.get_header("Authorization") == "Bearer hf_test"
