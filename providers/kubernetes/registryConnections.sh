#!/usr/bin/env bash
# A node's connections to private registries (sent after lib.sh and containerdLogins.sh): one containerd
# hosts.toml (and CA) per registry under the hosts directory node preparation set as containerd's config_path,
# read per pull without a restart (containerd docs/hosts.md); the registries' /etc/hosts lines in one marked
# block; their logins as the kubelet's credentials file, and as containerd's own for the pulls no kubelet makes
# (containerdLogins.sh). Directories of registries no longer listed go; others' are never touched.
#
#   registryConnections.sh apply HOSTS_LINES COUNT [DIR HOSTS_TOML CA_PEM]...
#       with KUBELET_CREDENTIALS (base64 of the config.json; empty: no logins) and CONTAINERD_LOGINS
#       ("HOST[:PORT] AUTH" lines, AUTH the base64 of user:password) exported ahead of the script
#   registryConnections.sh report     what a refresh compares
#   registryConnections.sh remove     take every connection out again
#   registryConnections.sh logins-block  the login tables for the containerd configuration on stdin
action="$1"
shift

HOSTS_DIR=/etc/containerd/certs.d
CREDENTIALS=/var/lib/kubelet/config.json
MARK="# Written by k8s-vnf (privateRegistries); rewritten on every update."
HOSTS_BEGIN="# BEGIN k8s-vnf registries"
HOSTS_END="# END k8s-vnf registries"

# The registry directories this script wrote: their hosts.toml starts with MARK.
managed_dirs() {
    local toml
    for toml in "$HOSTS_DIR"/*/hosts.toml; do
        [[ -f "$toml" ]] || continue
        [[ "$(head -n 1 "$toml")" == "$MARK" ]] && basename "$(dirname "$toml")"
    done
    return 0
}

write_registry() {
    local dir="$HOSTS_DIR/$1" toml="$2" ca="$3" changed
    changed="$(printf '%s' "$toml" | install_file "$dir/hosts.toml" 0644)"
    if [[ -n "$ca" ]]; then
        changed+="$(printf '%s' "$ca" | install_file "$dir/ca.crt" 0644)"
    else
        changed+="$(remove_file "$dir/ca.crt")"
    fi
    if [[ "$changed" == *changed* ]]; then echo "registry $1: $dir/hosts.toml written"; fi
}

remove_unlisted() {
    local wanted="$1" dir
    while read -r dir; do
        [[ -n "$dir" ]] || continue
        grep -qxF "$dir" <<<"$wanted" && continue
        rm -rf -- "${HOSTS_DIR:?}/$dir"
        echo "registry $dir: connection removed"
    done < <(managed_dirs)
}

write_credentials() {
    if [[ -n "${KUBELET_CREDENTIALS:-}" ]]; then
        if [[ "$(printf '%s' "$KUBELET_CREDENTIALS" | base64 -d | install_file "$CREDENTIALS" 0600)" == changed ]]; then
            echo "kubelet registry logins written to $CREDENTIALS"
        fi
    elif [[ "$(remove_file "$CREDENTIALS")" == changed ]]; then
        echo "kubelet registry logins removed"
    fi
}

report() {
    printf 'registries='
    managed_dirs | sort | paste -sd'|' -
    printf 'hosts='
    block_lines /etc/hosts "$HOSTS_BEGIN" "$HOSTS_END" | paste -sd'|' -
    if [[ -f "$CREDENTIALS" ]]; then echo "credentials=present"; else echo "credentials=absent"; fi
}

case "$action" in
apply)
    hosts_lines="$1" count="$2"
    shift 2
    wanted=""
    for ((i = 0; i < count; i++)); do
        write_registry "$1" "$2" "$3"
        wanted+="$1"$'\n'
        shift 3
    done
    remove_unlisted "$wanted"
    write_block /etc/hosts "$HOSTS_BEGIN" "$HOSTS_END" "$hosts_lines"
    write_credentials
    write_containerd_logins "${CONTAINERD_LOGINS:-}"
    echo "registry connections: $count"
    ;;
report) report ;;
# The tables apply adds to a containerd configuration on stdin, for CONTAINERD_LOGINS (for tests).
logins-block) logins_block <(cat) "${CONTAINERD_LOGINS:-}" ;;
remove)
    remove_unlisted ""
    write_block /etc/hosts "$HOSTS_BEGIN" "$HOSTS_END" ""
    KUBELET_CREDENTIALS="" write_credentials
    write_containerd_logins ""
    ;;
*) echo "registryConnections.sh: unknown action $action" >&2; exit 2 ;;
esac
