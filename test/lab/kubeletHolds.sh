# shellcheck shell=bash
# Sourced by lab.sh. What a lab of kubelet hosts needs of the machine-wide kernel settings, held while such a lab
# runs: each hold is a file named by the lab's run, the last lab to let go puts the machine's values back, and a
# hold whose lab's bridge is gone (its test process killed) counts no more.
#  - conntrack: kube-proxy sets net.netfilter.nf_conntrack_max to max(maxPerCore x CPUs, min) unless it is that
#    already (kubernetes v1.31 cmd/kube-proxy/app/conntrack.go, setIntSysCtl; kubeadm leaves the defaults of
#    pkg/proxy/apis/config/v1alpha1/defaults.go: 32768 per CPU, at least 131072), and exits when it cannot. The
#    kernel makes that setting read-only in any other network namespace, so on a lab host kube-proxy cannot write
#    it, where on a VM it can: the lab sets it to that value itself.
#  - inotify: every host's processes run as the machine's root, so they share root's inotify instances
#    (fs.inotify.max_user_instances, 128 by default), where each VM has 128 of its own. A master holds about 30
#    (systemd, logind, D-Bus, containerd, the kubelet, the API server, the controller manager, kube-proxy), and
#    two clusters side by side used 138: a new worker's join then found no CRI service on its containerd, as
#    when the CRI plugin cannot make its CNI configuration watcher. The lab raises the instances and watches.
KUBELET_HOLDS=/run/k8s-vnf-lab/kubelet-holds
CONNTRACK_MAX=/proc/sys/net/netfilter/nf_conntrack_max
CONNTRACK_HASHSIZE=/sys/module/nf_conntrack/parameters/hashsize
INOTIFY_INSTANCES=/proc/sys/fs/inotify/max_user_instances
INOTIFY_WATCHES=/proc/sys/fs/inotify/max_user_watches
LAB_INOTIFY_INSTANCES=8192
LAB_INOTIFY_WATCHES=1048576

kube_proxy_conntrack_max() {
    local cpus
    cpus=$(getconf _NPROCESSORS_ONLN)
    echo $((cpus * 32768 > 131072 ? cpus * 32768 : 131072))
}

kubelet_holds_locked() { # then runs "$@" under the holds' lock, stale holds dropped first
    mkdir -p "$KUBELET_HOLDS"
    exec 8>"$KUBELET_HOLDS/.lock"
    flock 8
    local hold
    for hold in "$KUBELET_HOLDS"/held-*; do
        [[ -e "$hold" ]] || continue
        ip link show "$(bridge_name "${hold##*/held-}")" >/dev/null 2>&1 || rm -f "$hold"
    done
    "$@"
    exec 8>&-
}

at_least() { # FILE VALUE: raises the setting to VALUE when it is lower
    if (($(cat "$1") < $2)); then echo "$2" >"$1"; fi
}

kubelet_settings_set() {
    local run="$1" max
    max=$(kube_proxy_conntrack_max)
    [[ -f "$KUBELET_HOLDS/machine" ]] ||
        echo "$(cat "$CONNTRACK_MAX") $(cat "$CONNTRACK_HASHSIZE") $(cat "$INOTIFY_INSTANCES") $(cat "$INOTIFY_WATCHES")" >"$KUBELET_HOLDS/machine"
    touch "$KUBELET_HOLDS/held-$run"
    echo "$max" >"$CONNTRACK_MAX"
    # kube-proxy writes the hash size only when it is under a quarter of the maximum.
    at_least "$CONNTRACK_HASHSIZE" $((max / 4))
    at_least "$INOTIFY_INSTANCES" "$LAB_INOTIFY_INSTANCES"
    at_least "$INOTIFY_WATCHES" "$LAB_INOTIFY_WATCHES"
}

kubelet_settings_restore() {
    rm -f "$KUBELET_HOLDS/held-$1"
    compgen -G "$KUBELET_HOLDS/held-*" >/dev/null && return 0
    [[ -f "$KUBELET_HOLDS/machine" ]] || return 0
    local max hashsize instances watches
    read -r max hashsize instances watches <"$KUBELET_HOLDS/machine"
    [[ "$(cat "$CONNTRACK_HASHSIZE")" == "$hashsize" ]] || echo "$hashsize" >"$CONNTRACK_HASHSIZE"
    echo "$max" >"$CONNTRACK_MAX"
    echo "$instances" >"$INOTIFY_INSTANCES"
    echo "$watches" >"$INOTIFY_WATCHES"
    rm -f "$KUBELET_HOLDS/machine"
}

kubelet_hold() { kubelet_holds_locked kubelet_settings_set "$1"; }
kubelet_release() { kubelet_holds_locked kubelet_settings_restore "$1"; }
