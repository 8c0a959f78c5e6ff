"""GPU smoke test: boot the stack's own Serve app on one machine and prove it serves.

`python -m lab.smoke --stack dev --model-dir DIR` (a host with two or more NVIDIA GPUs and
`requirements-gpu.txt` installed) takes the serve config the RayService gets, built by the same
`infra.serving.serve_config.build_serve_config` from the stack's config, and changes only what one host
needs; each change is printed by name. It then starts Ray, deploys the app through the dashboard's
REST API (the call KubeRay makes), waits for RUNNING, lists the models, times a streamed chat
completion, checks the logs for the NIXL backend and a prefill→decode KV transfer, stops Ray and
exits 0 only when every step passed. `--aggregated` serves the same model without disaggregation
(`build_openai_app`, one replica, one GPU) as the baseline; `--share-gpu` puts prefill and decode on one
GPU; `--update-scenario OUT.json` then replays KubeRay's in-place update (a good change, a broken one, the
rollback) under traffic and judges each with the stack's rollout verdict (`infra.serving.rollout_status`);
`--metrics-out FILE` scrapes Ray's metrics export; with a `models` list (`--config models=...`) each model beside
the pair loads from `--model-dir-of ID=DIR` and `--adapters-dir` serves their LoRA adapters from a local S3 server,
then every model and adapter must answer (lab/smoke/models.py); `--dry-run` only builds, prints and validates the
config. `python -m lab.tiny_model DIR` makes a model for it with no model hub.

The package by job, each module importing only those before it: `host` and `document` (what the overrides read),
`overrides`, `app` (the config this run serves), `deploy`, then the checks (`logs`, `checks`, `auth`, `metrics`,
`bench`, `update`, `models`: several models and their adapters, docs/models.md), `args` and `run`, which plays them
in order; `__main__` runs it.
"""
