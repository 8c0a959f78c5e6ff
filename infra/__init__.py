"""ray-llm-eks: multi-node LLM inference on Amazon EKS, one `pulumi up` per environment."""
