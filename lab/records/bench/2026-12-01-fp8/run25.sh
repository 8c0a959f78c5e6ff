#!/bin/bash
# Issue 25 three-way comparison (bf16 / FP8 weights / FP8 weights + FP8 KV) and issue 24's auth proof, one H200.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH=/tmp/gpu/site:/tmp/code
O=/tmp/out25; mkdir -p $O/bench
cd /tmp/code
{ date -u; nvidia-smi; python3 --version; } > $O/host.txt 2>&1
( time python3 -m tools.tiny_model /tmp/full --shape full --device cuda ) > $O/tiny.log 2>&1
COMMON="--model-dir /tmp/full --aggregated --api-key-auth --gpu-memory-of 23034 --max-model-len stack --no-enforce-eager --max-tokens 128 --deploy-timeout 780 --bench 1,4,16,64,128 --bench-requests 200 --bench-timeout 300 --bench-dir $O/bench"
run() { label=$1; shift; echo "start $label $(date -u +%T)" >> $O/progress.txt
  python3 -m tools.smoke $COMMON --bench-label $label --ray-temp-dir /tmp/ray-$label "$@" > $O/smoke-$label.log 2>&1
  echo "end $label rc=$? $(date -u +%T)" >> $O/progress.txt; }
run bf16
run fp8kv --config prefillQuantization=fp8 --config decodeQuantization=fp8 --config kvCacheDtype=fp8
run fp8 --config prefillQuantization=fp8 --config decodeQuantization=fp8
touch $O/done
