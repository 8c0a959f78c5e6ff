#!/bin/bash
# Issue 37 on one GPU: two replicas of the aggregated engine with prefix caching on, each at an L4's memory on half of
# the GPU, behind the stack's prefix-aware router and then behind Serve's default router; vLLM's bench on the
# shared-prefix workload at 16 and 4 concurrent requests (LEVELS to change), and what each level added to each engine's counters.
# Started detached from the code in /tmp/code with the wheel bundle in /tmp/site; results land in /tmp/out.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:/tmp/code PATH=/tmp/site/bin:$PATH
O=/tmp/out; mkdir -p $O/bench
cd /tmp/code
{ date -u; nvidia-smi; python3 --version; cat COMMIT
  python3 -c 'import torch, transformers, vllm, ray; print("torch", torch.__version__, "transformers", transformers.__version__, "vllm", vllm.__version__, "ray", ray.__version__)'
} > $O/host.txt 2>&1
nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv -l 5 > $O/gpu.csv 2>&1 &
SAMPLER=$!
echo "model start $(date -u +%T)" >> $O/progress.txt
( time python3 -m tools.tiny_model /tmp/full --shape full --device cuda ) > $O/tiny.log 2>&1
echo "model end rc=$? $(date -u +%T)" >> $O/progress.txt
for mode in ${MODES:-route_on route_off}; do
  case $mode in route_on) routing=true ;; *) routing=false ;; esac
  python3 -m tools.smoke --stack dev --model-dir /tmp/full --aggregated --share-gpu \
    --config prefillReplicas=2 --config decodeReplicas=2 --config maxModelLen=4096 \
    --config prefixCaching=on --config prefixAwareRouting=$routing \
    --max-model-len stack --no-enforce-eager --gpu-memory-of 23034 --deploy-timeout 600 --requests 3 \
    --bench ${LEVELS:-16,4} --bench-workload prefix --bench-requests 200 --bench-label $mode --bench-dir $O/bench \
    --metrics-out $O/metrics-$mode.txt > $O/smoke-$mode.log 2>&1
  echo "$mode rc=$? $(date -u +%T)" >> $O/progress.txt
  grep -h -E "prefix cache|Prefix cache|mamba_cache_mode|Mamba cache mode|GPU KV cache size|Maximum concurrency|block size|preempt|Traceback|Error" \
    /tmp/ray/session_latest/logs/serve/*.log /tmp/ray/session_latest/logs/worker-*.err 2>/dev/null | tail -300 > $O/engines-$mode.log
done
kill $SAMPLER
touch $O/done
