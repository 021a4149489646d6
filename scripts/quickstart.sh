#!/usr/bin/env bash
# Install aicr-gen into .venv and resolve the recipe for eks/h100/ubuntu/inference/dynamo from the
# embedded catalog; the recipe is printed and saved to out/recipe.yaml.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/venv.sh
. scripts/venv.sh
make_venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check .
mkdir -p out
.venv/bin/aicr-gen recipe --service eks --accelerator h100 --intent inference --os ubuntu \
    --platform dynamo -o out/recipe.yaml
cat out/recipe.yaml
echo "saved: out/recipe.yaml" >&2
