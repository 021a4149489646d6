#!/usr/bin/env bash
# Install aicr-gen into .venv, save the eks/h100/ubuntu/inference/dynamo recipe of the embedded catalog to
# out/recipe.yaml, then run scripts/demo.sh with it: sync a ClusterSpec into a temporary GitOps repository,
# bump a version and sync again, and diff the example snapshots. Offline once installed.
set -euo pipefail
cd "$(dirname "$0")/.."
LC_NUMERIC=C
start=$SECONDS
step() { printf '\n[%s/3] %s (%ss so far)\n' "$1" "$2" "$((SECONDS - start))"; }
# shellcheck source=scripts/venv.sh
. scripts/venv.sh
if [ -x .venv/bin/aicr-gen ]; then
    step 1 "updating aicr-gen in .venv: a few seconds"
else
    step 1 "installing aicr-gen into .venv: about 15 s the first time (about 20 packages; pip lists each), seconds after"
fi
make_venv .venv
.venv/bin/python -m pip install --disable-pip-version-check --progress-bar off .
.venv/bin/aicr-gen --version
step 2 "resolving the eks/h100/ubuntu/inference/dynamo recipe of the embedded catalog"
mkdir -p out
.venv/bin/aicr-gen recipe --service eks --accelerator h100 --intent inference --os ubuntu \
    --platform dynamo -o out/recipe.yaml
echo "saved: out/recipe.yaml (the recipe the demo's ClusterSpec resolves)"
step 3 "the demo: sync a ClusterSpec into a new GitOps repository, bump, sync again, diff two snapshots"
AICR_GEN=$PWD/.venv/bin/aicr-gen bash scripts/demo.sh
printf '\ndone in %ss; aicr-gen is .venv/bin/aicr-gen\n' "$((SECONDS - start))"
