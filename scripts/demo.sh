#!/usr/bin/env bash
# The whole story on the embedded catalog, offline, in a temporary folder: sync an example ClusterSpec
# (argocd + flux) into a new GitOps repository, pin gpu-operator one minor newer in spec.versions, sync again
# and read the summarised change, then diff the golden baseline snapshot against the example live one.
# Uses aicr-gen from PATH, or $AICR_GEN. Reads examples/ and snapshots/ only; writes nothing in the checkout.
set -euo pipefail
LC_NUMERIC=C  # EPOCHREALTIME with a '.' whatever the user's locale
start=${EPOCHREALTIME:-$(date +%s)}
root=$(cd "$(dirname "$0")/.." && pwd)
aicr=${AICR_GEN:-aicr-gen}
if ! command -v "$aicr" >/dev/null; then
    echo "demo: $aicr not found: put aicr-gen on PATH or set AICR_GEN (./scripts/quickstart.sh does both)" >&2
    exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/aicr-gen-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
repo=$work/gitops
spec=$work/cluster.yaml

section() { printf '\n==> %s\n' "$*"; }
show() { printf '$ %s\n' "$*"; "$@"; }

# set_spec_key FILE KEY BLOCK: replace spec.KEY (a top-level key under spec:, with its indented lines) by
# BLOCK in place, or add BLOCK right after spec: when the key is absent; comments elsewhere stay.
set_spec_key() {
    awk -v key="$2" -v block="$3" '
        NR == FNR { if ($0 ~ "^  " key ":") found = 1; next }
        skip && /^    / { next }
        { skip = 0 }
        $0 ~ "^  " key ":" { print block; skip = 1; next }
        { print }
        /^spec:/ && !found { print block }
    ' "$1" "$1" >"$1.new"
    mv "$1.new" "$1"
}

section "a new GitOps repository with one commit ($repo)"
git init -q "$repo"
git -C "$repo" symbolic-ref HEAD refs/heads/main
git -C "$repo" config user.name "aicr-gen demo"
git -C "$repo" config user.email "demo@example.invalid"
printf '# GitOps repository of the aicr-gen demo\n' >"$repo/README.md"
git -C "$repo" add README.md
git -C "$repo" -c commit.gpgsign=false commit -q -m "initial commit"
git -C "$repo" log --oneline

section "the ClusterSpec: examples/eks-h100-inference-dynamo.yaml with deployers [argocd, flux]"
cp "$root/examples/eks-h100-inference-dynamo.yaml" "$spec"
set_spec_key "$spec" deployers "  deployers: [argocd, flux]"
sed -n '/^spec:/,/^  repo:/p' "$spec" | grep -v '^ *#'

section "sync: render the whole tree and commit it"
show "$aicr" sync "$spec" --repo "$repo"
printf '$ git show --stat HEAD  (abridged)\n'
git -C "$repo" show --stat=100 --format='commit %h  %s' HEAD | awk '
    NR <= 12 { print; next }
    /files? changed/ { print "  ..."; print }'

section "sync --check: the repository is up to date (exit 0)"
show "$aicr" sync --check "$spec" --repo "$repo"

# the recipe committed at the top of the managed folder: the shortest recipe.yaml path in the repository
recipe=$(git -C "$repo" ls-files -- '*recipe.yaml' | awk -F/ '!best || NF < n { n = NF; best = $0 } END { print best }')
current=$(awk '
    /- name: / { in_gpu = ($NF == "gpu-operator") }
    in_gpu && $1 == "version:" { print $2; exit }
' "$repo/$recipe")
bumped=$(echo "$current" | awk -F. '{ printf "%s.%d.0", $1, $2 + 1 }')
section "change one version: spec.versions pins gpu-operator $bumped (the recipe has $current)"
set_spec_key "$spec" versions "  versions:
    gpu-operator: $bumped"
sed -n '/^  versions:/,/^  [^ ]/p' "$spec" | sed '$d'

section "sync --check: the committed tree is now stale (exit 1, expected)"
printf '$ %s sync --check %s --repo %s\n' "$aicr" "$spec" "$repo"
code=0
"$aicr" sync --check "$spec" --repo "$repo" 2>&1 || code=$?
if [ "$code" != 1 ]; then
    echo "demo: sync --check exited $code, expected 1 (stale)" >&2
    exit 1
fi
echo "(exit $code)"

section "sync again: the commit message summarises the change"
show "$aicr" sync "$spec" --repo "$repo"
printf '$ git log -1 --format=%%B\n'
git -C "$repo" log -1 --format=%B
show git -C "$repo" diff --stat=100 HEAD~1

section "drift: the golden baseline against the example live snapshot (snapshots/)"
cd "$root"
show "$aicr" diff --baseline snapshots/golden-baseline.yaml --target snapshots/example-live.yaml
echo "(diff exits 0 on drift; add --fail-on-drift to make drift fail a CI job)"

end=${EPOCHREALTIME:-$(date +%s)}
section "done in $(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", e - s }') s"
