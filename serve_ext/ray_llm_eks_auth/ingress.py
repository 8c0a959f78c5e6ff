"""The ingress class the serve config names: Ray Serve LLM's OpenAI ingress behind API keys.

Imported only inside the cluster (it needs vLLM's protocol models, which Ray's ingress module imports).
"""

from ray.llm._internal.serve.core.ingress.ingress import OpenAiIngress

from ray_llm_eks_auth import ApiKeyIngressMixin


class ApiKeyIngress(ApiKeyIngressMixin, OpenAiIngress):
    pass
