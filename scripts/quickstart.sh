#!/usr/bin/env bash
# Install aicr-gen into .venv, save the eks/h100/ubuntu/inference/dynamo recipe of the embedded catalog to
# out/recipe.yaml, then run scripts/demo.sh with it: sync a ClusterSpec into a temporary GitOps repository,
# bump a version and sync again, and diff the example snapshots. Offline once installed.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/venv.sh
. scripts/venv.sh
make_venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check .
mkdir -p out
.venv/bin/aicr-gen recipe --service eks --accelerator h100 --intent inference --os ubuntu \
    --platform dynamo -o out/recipe.yaml
echo "saved: out/recipe.yaml (the recipe the demo's ClusterSpec resolves)"
AICR_GEN=$PWD/.venv/bin/aicr-gen bash scripts/demo.sh
