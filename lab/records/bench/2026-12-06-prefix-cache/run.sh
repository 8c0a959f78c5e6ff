#!/bin/bash
# Issue 37 on one GPU: the default model's full shape, then tools.prefix_cache_gpu (two `vllm serve` engines at an
# L4's memory, prefix caching off and on; the teacher-forced comparison; `vllm bench serve` at each level). Started
# detached from the code in /tmp/code with the wheel bundle in /tmp/site; results land in /tmp/out as they come.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 VLLM_USE_FLASHINFER_SAMPLER=0
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:/tmp/code
O=/tmp/out; mkdir -p $O
cd /tmp/code
{ date -u; nvidia-smi; python3 --version; cat COMMIT
  python3 -c 'import torch, transformers, vllm; print("torch", torch.__version__, "transformers", transformers.__version__, "vllm", vllm.__version__)'
} > $O/host.txt 2>&1
nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv -l 5 > $O/gpu.csv 2>&1 &
SAMPLER=$!
echo "model start $(date -u +%T)" >> $O/progress.txt
( time python3 -m tools.tiny_model /tmp/full --shape full --device cuda ) > $O/tiny.log 2>&1
echo "model end rc=$? $(date -u +%T)" >> $O/progress.txt
python3 -m tools.prefix_cache_gpu run --serve-config serve-config.json --model-dir /tmp/full --out $O \
  --gpu-memory-of 23034 --levels 16,64,4,1 --requests 200 --deadline-s "${DEADLINE_S:-1200}" > $O/run.log 2>&1
echo "run end rc=$? $(date -u +%T)" >> $O/progress.txt
kill $SAMPLER
touch $O/done
