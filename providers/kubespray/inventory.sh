#!/usr/bin/env bash
# A cluster's kubespray inventory on the Ansible server and the playbook runs over it (sent after lib.sh).
# The inventory directory belongs to one cluster, named in its marker file; it is the login user's, mode
# 0700, and its secret files are 0600. Playbook runs on one inventory take its lock, one at a time.
#
#   inventory.sh claim INV CLUSTER USER      make INV the cluster's (refused when another cluster's)
#   inventory.sh write INV CLUSTER           write the files in $K8S_VNF_FILES, each atomically, and remove
#                                            our host_vars of nodes no longer listed
#   inventory.sh add INV CLUSTER             write the files in $K8S_VNF_FILES, each atomically, removing none
#   inventory.sh run INV ROOT PLAYBOOK_BIN PLAYBOOK [ARG...]
#                                            ansible-playbook in ROOT (its ansible.cfg applies) with INV's
#                                            hosts.yaml; output streamed and kept in INV/logs; a failure
#                                            ends with the PLAY RECAP
#   inventory.sh forget INV CLUSTER NODE     remove a node's leaving/NODE.yaml and its login, once removed
#   inventory.sh forget-keys INV CLUSTER ADDRESS...
#                                            remove the host keys INV/known_hosts holds for ADDRESS...
#   inventory.sh release INV CLUSTER         delete INV when it is this cluster's
#   inventory.sh mtu ADDRESS                 MTU of the interface holding ADDRESS (run on a node)
#
# $K8S_VNF_FILES: one file per line, "RELATIVE-PATH MODE BASE64", paths inside INV.
action="$1"
shift

MARKER=.k8s-vnf-cluster
LOGIN_FILE=k8s-vnf-login.yml

require_ours() {
    local inv="$1" cluster="$2"
    [[ -f "$inv/$MARKER" ]] || die "$inv is no inventory of k8s-vnf's"
    [[ "$(cat "$inv/$MARKER")" == "$cluster" ]] || die "$inv holds the inventory of another cluster ($(cat "$inv/$MARKER")), not of $cluster: set kubespray.inventoryPath to a directory of its own"
}

claim() {
    local inv="$1" cluster="$2" user="$3"
    if [[ -e "$inv" ]]; then
        if [[ -f "$inv/$MARKER" ]]; then
            require_ours "$inv" "$cluster"
        elif [[ -n "$(ls -A "$inv")" ]]; then
            die "$inv holds files that are no inventory of k8s-vnf's: set kubespray.inventoryPath to a directory of its own"
        fi
    fi
    mkdir -p "$inv"
    printf '%s\n' "$cluster" >"$inv/$MARKER"
    chown -R "$user:" "$inv"
    chmod 0700 "$inv"
}

# add_files INV CLUSTER: writes the files of $K8S_VNF_FILES; prints their paths.
add_files() {
    local inv="$1" cluster="$2" path mode data
    require_ours "$inv" "$cluster"
    while read -r path mode data; do
        [[ -n "$path" ]] || continue
        [[ "$path" != /* && "/$path/" != */../* ]] || die "refusing to write $path outside $inv"
        printf '%s' "$data" | base64 -d | install_file "$inv/$path" "$mode" >/dev/null
        echo "$path"
    done <<<"${K8S_VNF_FILES:-}"
}

write_files() {
    local inv="$1" cluster="$2" path listed dir
    listed="$(add_files "$inv" "$cluster")"
    for dir in "$inv"/host_vars/*/; do
        [[ -d "$dir" ]] || continue
        path="host_vars/$(basename "$dir")/$LOGIN_FILE"
        # A node being removed (leaving/NODE.yaml, see forget) keeps its login until its removal ran.
        if [[ -f "$inv/$path" && ! -f "$inv/leaving/$(basename "$dir").yaml" ]] && ! grep -qxF "$path" <<<"$listed"; then
            rm -f "$inv/$path"
            rmdir "$dir" 2>/dev/null || true
        fi
    done
}

run_playbook() {
    local inv="$1" root="$2" bin="$3" playbook="$4" log rc
    shift 4
    mkdir -p "$inv/logs"
    log="$inv/logs/$(date -u +%Y%m%dT%H%M%SZ)-$(basename "$playbook" .yml).log"
    cd "$root"
    echo "ansible-playbook $playbook $*"
    # flock: one run per inventory at a time (two steps of one cluster may run at once).
    set +e
    # </dev/null: this script reaches bash on its stdin, which a prompt of a play must not read.
    ANSIBLE_NOCOLOR=1 flock "$inv/.lock" "$bin" -i "$inv/hosts.yaml" --become --become-user=root "$playbook" "$@" </dev/null 2>&1 | tee "$log"
    rc=$? # pipefail: ansible-playbook's status
    set -e
    if ((rc != 0)); then
        {
            echo "ansible-playbook $playbook failed (exit $rc); its log is $log on the Ansible server"
            # What failed where (cut: a task's result can run to pages), then the recap (not the task timings
            # that profile_tasks, which kubespray's ansible.cfg enables, prints after it).
            grep -E '^(fatal|failed): ' "$log" | cut -c1-400 | head -n 10 || true
            sed -n '/^PLAY RECAP/,/^$/p' "$log"
        } >&2
        exit "$rc"
    fi
}

forget() {
    local inv="$1" cluster="$2" node="$3"
    require_ours "$inv" "$cluster"
    if [[ ! -e "$inv/hosts.yaml" ]] || ! grep -q "^    $node:\$" "$inv/hosts.yaml"; then
        rm -rf "$inv/host_vars/$node"
    fi
    rm -f "$inv/leaving/$node.yaml"
}

forget_keys() {
    local inv="$1" cluster="$2" address
    shift 2
    require_ours "$inv" "$cluster"
    [[ -f "$inv/known_hosts" ]] || return 0
    for address in "$@"; do
        ssh-keygen -R "$address" -f "$inv/known_hosts" >/dev/null 2>&1 || true
    done
    rm -f "$inv/known_hosts.old"
}

release() {
    local inv="$1" cluster="$2"
    [[ -e "$inv" ]] || return 0
    require_ours "$inv" "$cluster"
    rm -rf "$inv"
}

mtu_of() {
    local dev
    dev="$(ip -o addr show to "$1" | awk '{print $2; exit}')"
    [[ -n "$dev" ]] || die "no interface holds $1"
    ip -o link show dev "$dev" | sed -n 's/.* mtu \([0-9]*\) .*/\1/p'
}

case "$action" in
claim) claim "$@" ;;
write) write_files "$@" ;;
add) add_files "$@" >/dev/null ;;
run) run_playbook "$@" ;;
forget) forget "$@" ;;
forget-keys) forget_keys "$@" ;;
release) release "$@" ;;
mtu) mtu_of "$@" ;;
*) die "unknown action $action" ;;
esac
