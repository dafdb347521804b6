#!/usr/bin/env bash
# The Ansible server (sent after lib.sh): a kubespray release unpacked in ROOT, and an ansible-playbook
# whose ansible-core that release accepts. An Ansible already there that fits is used as it is; otherwise
# a virtualenv beside ROOT gets the release's own requirements.txt (kubespray's documented install). Safe
# to run twice: a release already in place, recorded by its archive's SHA-256, is left alone.
#
#   ansibleServer.sh install ROOT VERSION CORE_MIN CORE_MAX ARCHIVE SHA256 USER
#       ARCHIVE: an uploaded release archive (moved away here), or "" to download VERSION from GitHub
#       (the proxy, if any, comes in the environment); SHA256: the archive's, or "" when downloaded.
#   ansibleServer.sh report ROOT
#
# Prints key=value lines: release, playbook (the ansible-playbook to run), core (its ansible-core version).
action="$1"
shift

MARKER=.k8s-vnf-release

# core_version PLAYBOOK: the ansible-core version of an ansible-playbook ("ansible-playbook [core 2.14.3]").
core_version() {
    "$1" --version 2>/dev/null | sed -n '1s/.*\[core \([0-9][0-9.]*\)\].*/\1/p'
}

# version_in V MIN MAX: MIN <= V < MAX, compared as versions.
version_in() {
    [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" == "$2" ]] && [[ "$1" != "$3" ]] &&
        [[ "$(printf '%s\n%s\n' "$1" "$3" | sort -V | head -1)" == "$1" ]]
}

# python_modules PLAYBOOK: whether the Python beside that ansible-playbook imports what kubespray's filters use.
python_modules() {
    local python
    python="$(head -1 "$(command -v "$1")" | sed -n 's/^#! *//p' | awk '{print $1}')"
    [[ -n "$python" ]] || python=python3
    [[ "$python" != */env ]] || python=python3
    "$python" -c 'import jmespath, netaddr' 2>/dev/null
}

# release_version DIR: the version a kubespray tree says it is (galaxy.yml, present in every release).
release_version() {
    awk '$1 == "version:" { gsub(/["'\'']/, "", $2); print "v" $2; exit }' "$1/galaxy.yml" 2>/dev/null || true
}

install_release() {
    local root="$1" version="$2" archive="$3" sha="$4" user="$5" staging
    if [[ -f "$root/$MARKER" && "$(cat "$root/$MARKER")" == "$version ${sha:-download}" ]]; then
        [[ -z "$archive" ]] || rm -f "$archive"
        return
    fi
    if [[ -d "$root" && -n "$(ls -A "$root")" && ! -f "$root/$MARKER" ]]; then
        # Somebody's own checkout (Tacker's guide has one): used when it is the release asked for.
        local found
        found="$(release_version "$root")"
        [[ -z "$archive" ]] || rm -f "$archive"
        [[ "$found" == "$version" ]] || die "$root holds kubespray ${found:-of unknown version} that k8s-vnf did not install, not $version: set kubespray.version to it, or kubespray.kubesprayRoot to another directory"
        echo "using the kubespray $version checkout already in $root"
        return
    fi
    staging="$(mktemp -d "$(dirname "$root")/.kubespray.XXXXXX")"
    if [[ -z "$archive" ]]; then
        archive="$staging.tar.gz"
        echo "downloading kubespray $version from GitHub"
        curl -fsSL --retry 3 -o "$archive" "https://github.com/kubernetes-sigs/kubespray/archive/refs/tags/$version.tar.gz" ||
            die "could not download kubespray $version from GitHub (give the release as kubespray.releaseFile where GitHub cannot be reached)"
    fi
    tar -xzf "$archive" -C "$staging" --strip-components=1 --no-same-owner || die "the kubespray archive could not be unpacked"
    rm -f "$archive"
    [[ -f "$staging/cluster.yml" && -f "$staging/scale.yml" && -f "$staging/remove-node.yml" ]] || die "the archive is no kubespray release (no cluster.yml, scale.yml, remove-node.yml at its top)"
    [[ "$(release_version "$staging")" == "$version" ]] || die "the archive holds kubespray $(release_version "$staging"), not $version"
    echo "$version ${sha:-download}" >"$staging/$MARKER"
    chown -R "$user:" "$staging"
    chmod 0755 "$staging"
    if [[ -e "$root" ]]; then
        mv "$root" "$staging.old"
        mv "$staging" "$root"
        rm -rf "$staging.old"
    else
        mv "$staging" "$root"
    fi
    echo "installed kubespray $version in $root"
}

# ansible_for ROOT CORE_MIN CORE_MAX USER: prints the ansible-playbook to use, installing one when none fits.
ansible_for() {
    local root="$1" min="$2" max="$3" user="$4" venv candidate core
    venv="$root-venv"
    for candidate in "$(command -v ansible-playbook || true)" "$venv/bin/ansible-playbook"; do
        [[ -n "$candidate" && -x "$candidate" ]] || continue
        core="$(core_version "$candidate")"
        if [[ -n "$core" ]] && version_in "$core" "$min" "$max" && python_modules "$candidate"; then
            echo "$candidate"
            return
        fi
        echo "ansible-core ${core:-?} at $candidate does not fit (kubespray wants $min <= ansible-core < $max, with jmespath and netaddr)" >&2
    done
    echo "installing kubespray's requirements.txt in $venv" >&2
    if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
        apt-get update -q >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv >&2
    fi
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q -r "$root/requirements.txt" >&2 || die "pip could not install $root/requirements.txt"
    chown -R "$user:" "$venv"
    core="$(core_version "$venv/bin/ansible-playbook")"
    version_in "$core" "$min" "$max" || die "requirements.txt installed ansible-core $core, outside $min..$max"
    echo "$venv/bin/ansible-playbook"
}

report() {
    local root="$1" playbook
    echo "release=$(awk '{print $1}' "$root/$MARKER" 2>/dev/null || release_version "$root")"
    for playbook in "$(command -v ansible-playbook || true)" "$root-venv/bin/ansible-playbook"; do
        [[ -n "$playbook" && -x "$playbook" ]] || continue
        echo "playbook=$playbook"
        echo "core=$(core_version "$playbook")"
        return
    done
}

case "$action" in
install)
    root="$1" version="$2" min="$3" max="$4" archive="$5" sha="$6" user="$7"
    mkdir -p "$(dirname "$root")"
    install_release "$root" "$version" "$archive" "$sha" "$user"
    playbook="$(ansible_for "$root" "$min" "$max" "$user")"
    echo "release=$version"
    echo "playbook=$playbook"
    echo "core=$(core_version "$playbook")"
    ;;
report) report "$1" ;;
*) die "unknown action $action" ;;
esac
