# shellcheck shell=bash
# Sourced by quickstart.sh and test.sh: make_venv DIR creates a virtualenv with pip.
# Debian's python3 ships venv without ensurepip unless python3-venv is installed; as root we install it.
make_venv() {
    local dir=$1
    if [ -x "$dir/bin/python" ] && "$dir/bin/python" -m pip --version >/dev/null 2>&1; then
        return 0
    fi
    rm -rf "$dir"
    if ! python3 -m venv "$dir" 2>/dev/null; then
        rm -rf "$dir"
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            echo "python3 -m venv needs Debian's python3-venv; installing it" >&2
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
            python3 -m venv "$dir"
        else
            echo "python3 -m venv failed: install your distribution's python3-venv package (needs root)" >&2
            return 1
        fi
    fi
}
