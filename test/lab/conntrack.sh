# shellcheck shell=bash
# Sourced by lab.sh. kube-proxy sets net.netfilter.nf_conntrack_max to max(maxPerCore x CPUs, min) unless it is
# that already (kubernetes v1.31 cmd/kube-proxy/app/conntrack.go, setIntSysCtl; kubeadm leaves the defaults of
# pkg/proxy/apis/config/v1alpha1/defaults.go: 32768 per CPU, at least 131072), and exits when it cannot. That
# setting is the machine's: the kernel makes it read-only in any other network namespace, so on a lab host
# kube-proxy cannot write it, where on a VM it can. So while a lab of kubelets runs ("holds"), the lab sets it
# to that value itself, and the last lab to let go puts the machine's value back. Each hold is a file named by
# the lab's run; a hold whose lab's bridge is gone (its test process killed) counts no more.
CONNTRACK_HOLDS=/run/k8s-vnf-lab/conntrack
CONNTRACK_MAX=/proc/sys/net/netfilter/nf_conntrack_max
CONNTRACK_HASHSIZE=/sys/module/nf_conntrack/parameters/hashsize

kube_proxy_conntrack_max() {
    local cpus
    cpus=$(getconf _NPROCESSORS_ONLN)
    echo $((cpus * 32768 > 131072 ? cpus * 32768 : 131072))
}

conntrack_locked() { # then runs "$@" under the holds' lock, stale holds dropped first
    mkdir -p "$CONNTRACK_HOLDS"
    exec 8>"$CONNTRACK_HOLDS/.lock"
    flock 8
    local hold
    for hold in "$CONNTRACK_HOLDS"/held-*; do
        [[ -e "$hold" ]] || continue
        ip link show "$(bridge_name "${hold##*/held-}")" >/dev/null 2>&1 || rm -f "$hold"
    done
    "$@"
    exec 8>&-
}

conntrack_set() {
    local run="$1" max
    max=$(kube_proxy_conntrack_max)
    [[ -f "$CONNTRACK_HOLDS/machine" ]] || echo "$(cat "$CONNTRACK_MAX") $(cat "$CONNTRACK_HASHSIZE")" >"$CONNTRACK_HOLDS/machine"
    touch "$CONNTRACK_HOLDS/held-$run"
    echo "$max" >"$CONNTRACK_MAX"
    # kube-proxy writes the hash size only when it is under a quarter of the maximum.
    if (($(cat "$CONNTRACK_HASHSIZE") < max / 4)); then echo $((max / 4)) >"$CONNTRACK_HASHSIZE"; fi
}

conntrack_restore() {
    rm -f "$CONNTRACK_HOLDS/held-$1"
    compgen -G "$CONNTRACK_HOLDS/held-*" >/dev/null && return 0
    [[ -f "$CONNTRACK_HOLDS/machine" ]] || return 0
    local max hashsize
    read -r max hashsize <"$CONNTRACK_HOLDS/machine"
    [[ "$(cat "$CONNTRACK_HASHSIZE")" == "$hashsize" ]] || echo "$hashsize" >"$CONNTRACK_HASHSIZE"
    echo "$max" >"$CONNTRACK_MAX"
    rm -f "$CONNTRACK_HOLDS/machine"
}

conntrack_hold() { conntrack_locked conntrack_set "$1"; }
conntrack_release() { conntrack_locked conntrack_restore "$1"; }
