#!/usr/bin/env bash
# Shared by the lab's stand-ins for kubeadm, kubectl and kubelet (the real ones cannot run here). They keep
# a small cluster state in a directory every lab host of one lab shares, standing in for etcd and the API
# server: nodes, etcd members, labels, bootstrap tokens and certificate keys. Every call is recorded.
#
#   $STATE/cluster            key=value lines, present once `kubeadm init` ran
#   $STATE/nodes/NAME         key=value lines: role, status (Ready|NotReady), unschedulable, address
#   $STATE/labels/NAME        key=value lines
#   $STATE/etcd/NAME          the member's ID (decimal, as etcdctl prints it in JSON)
#   $STATE/tokens/TOKEN       expiry (epoch seconds)
#   $STATE/certkeys/KEY       expiry (epoch seconds)
#   $STATE/applied            manifests applied with kubectl apply
#   $STATE/pvs/NAME/          a PersistentVolume: state (phase=, claim=, uid=), object.json (the Kubernetes
#                             provider's stand-in in test/support/engine writes them)
#   $STATE/objects/NS/RESOURCE/NAME.json
#                             every other Kubernetes object, live as the API server holds it (metadata.uid,
#                             resourceVersion, generation, spec, status); NS is the namespace, `_cluster` for
#                             cluster-scoped kinds, RESOURCE the plural (serviceaccounts, clusterrolebindings).
#                             Written by the Kubernetes provider's stand-in and its token and namespace
#                             controllers (test/support/engine/kubernetes/), which also create the bootstrap
#                             namespaces and RBAC roles on first use; it runs no workloads
#   $STATE/objects/.resourceVersion  the cluster's last resourceVersion (one counter, as etcd's revision)
#   $STATE/configmaps/NS/NAME.yaml
#                             the ConfigMaps kubeadm's addons make, as `kubectl get configmap -o yaml` prints
#                             them (kube-proxy's: written by `kubeadm init`, replaced by kubespray through kubectl)
#   $STATE/drain-blocked/NAME a pod disruption budget that blocks draining NAME (test knob)
#   $STATE/delay              seconds each `kubeadm init`/`join` takes (bench knob), default 0
#   $STATE/calls              "HOST TOOL ARGS..." for every call
set -euo pipefail

STATE=/var/lib/k8s-standin
VERSION_FILE=/etc/k8s-standin-version

standin_version() {
    if [[ -f "$VERSION_FILE" ]]; then cat "$VERSION_FILE"; else echo v1.31.4; fi
}

# Takes the state lock for the rest of the calling process.
lock_state() {
    mkdir -p "$STATE"/{nodes,labels,etcd,tokens,certkeys,drain-blocked}
    exec 8>"$STATE/.lock"
    flock 8
}

record_call() {
    local tool="$1"
    shift
    mkdir -p "$STATE"
    printf '%s %s %s\n' "$(hostname)" "$tool" "$*" >>"$STATE/calls"
}

fail() {
    echo "$*" >&2
    exit 1
}

# get_kv FILE KEY: the value of KEY= in FILE
get_kv() {
    awk -F= -v k="$2" '$1 == k { sub(/^[^=]*=/, ""); print; exit }' "$1"
}

set_kv() {
    local file="$1" key="$2" value="$3" tmp
    tmp="$(mktemp "$file.XXXXXX")"
    if [[ -f "$file" ]]; then awk -F= -v k="$key" '$1 != k' "$file" >"$tmp"; fi
    printf '%s=%s\n' "$key" "$value" >>"$tmp"
    mv -f "$tmp" "$file"
}

# yaml_value FILE KEY: the scalar after "KEY:" (first occurrence); for a list, its first item. A quoted scalar
# ('...' or "...", as kubespray's templates write some) is given without its quotes.
yaml_value() {
    awk -v k="$2" '
        function unquote(v) {
            if (v ~ /^'"'"'.*'"'"'$/ || v ~ /^".*"$/) v = substr(v, 2, length(v) - 2)
            return v
        }
        found && /^[[:space:]]*- / { sub(/^[[:space:]]*- /, ""); print unquote($0); exit }
        found { exit }
        {
            line = $0; sub(/^[[:space:]]+/, "", line)
            if (index(line, k ":") == 1) {
                v = substr(line, length(k) + 2); sub(/^[[:space:]]+/, "", v); sub(/[[:space:]]+$/, "", v)
                if (v != "") { print unquote(v); exit }
                found = 1
            }
        }' "$1"
}

require_kubeconfig() {
    [[ -f /etc/kubernetes/admin.conf ]] ||
        fail "The connection to the server localhost:8080 was refused - did you specify the right host or port?"
}

valid_until() {
    local file="$1"
    [[ -f "$file" ]] && (($(cat "$file") > $(date +%s)))
}
