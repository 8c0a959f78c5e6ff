#!/bin/bash
# Issue 53 on one GPU: the default model's full shape (written by the first call, /tmp/full), then lab.kv_offload_gpu
# (three `vllm serve` engines with an L4's KV bytes: prefix caching off, on, on with a 32 GiB host tier; the
# teacher-forced comparison; the multi-turn chat load at each level). Started detached from the code in /tmp/code with
# the wheel bundle in /tmp/site; results land in /tmp/out as they come; a host-memory sampler writes host-mem.txt.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 VLLM_USE_FLASHINFER_SAMPLER=0
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:/tmp/code PATH=/tmp/site/bin:$PATH
O=/tmp/out; mkdir -p $O
cd /tmp/code
{ date -u; nvidia-smi; python3 --version; cat COMMIT; free -g
  python3 -c 'import torch, transformers, vllm; print("torch", torch.__version__, "transformers", transformers.__version__, "vllm", vllm.__version__)'
} > $O/host.txt 2>&1
nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv -l 5 > $O/gpu.csv 2>&1 &
SAMPLER=$!
# resident memory of each engine's processes (vllm serve's API server and its engine core), and the host's
( while true; do date -u +%T; free -m | sed -n 2p; ps -eo pid,rss,args --sort=-rss | grep -E 'vllm|VLLM' | grep -v grep | head -8 | cut -c1-160; sleep 20; done ) > $O/host-mem.txt 2>&1 &
MEM=$!
# the first call started the model (lab.tiny_model --shape full, from the checkout); again here if that failed
while [ ! -f /tmp/full.rc ]; do sleep 2; done
[ "$(cat /tmp/full.rc)" = 0 ] || python3 -m lab.tiny_model /tmp/full --shape full --device cuda > $O/tiny-again.log 2>&1
cp /tmp/tiny.log $O/tiny.log 2>/dev/null
echo "run start $(date -u +%T)" >> $O/progress.txt
python3 -m lab.kv_offload_gpu run --default-config cfg/default.json --tiered-config cfg/tiered.json \
  --model-dir /tmp/full --out $O --levels "${LEVELS:-16,4,1}" --parts "${PARTS:-teacher,chat}" \
  --deadline-s "${DEADLINE_S:-1000}" > $O/run.log 2>&1
echo "run end rc=$? $(date -u +%T)" >> $O/progress.txt
kill $SAMPLER $MEM
touch $O/done
