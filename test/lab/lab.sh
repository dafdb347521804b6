#!/usr/bin/env bash
# Lab hosts for the tests: each host is a network namespace on a private bridge, running a real OpenSSH
# sshd chrooted into an overlay of a cached Debian rootfs. Must run as root.
#
#   lab.sh rootfs                              build (once) and print the cached rootfs directory
#   lab.sh bridge-up   RUN SUBNET              create bridge kv<RUN>br with SUBNET.1/24
#   lab.sh bridge-down RUN                     delete that bridge
#   lab.sh host-up     RUN NAME INDEX SUBNET DIR PUBKEY_FILE VOLUME_MB SHARED_DIR
#                                              start a host at SUBNET.(10+INDEX); state in DIR; SHARED_DIR
#                                              is the stand-ins' cluster state, the same for every host; the
#                                              login password comes in $LAB_PASSWORD, never on a command line
#   lab.sh host-down   RUN NAME DIR            stop exactly what host-up started
#   lab.sh link        RUN INDEX up|down       take a host's link up or down
#   lab.sh sshd-kill   DIR                     kill the host's sshd and its sessions
#   lab.sh sshd-start  RUN NAME DIR            start sshd again (same namespace and filesystem)
#   lab.sh rekey       DIR                     give the host new SSH host keys (takes effect on sshd-start)
#
# Everything a host creates is named after RUN and INDEX and recorded in DIR, so teardown removes exactly
# that, also after a failed test. Mounts live in the host's own mount namespace and vanish with it.
set -euo pipefail

CACHE="${K8S_VNF_LAB_CACHE:-/var/cache/k8s-vnf-lab}"
PACKAGES="openssh-server,sudo,iproute2,procps,e2fsprogs,util-linux,haproxy,keepalived,socat,containerd"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

die() { echo "lab: $*" >&2; exit 1; }

mirror() {
    local uri
    uri="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)"
    [[ -n "$uri" ]] || uri="$(awk '/^deb / {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)"
    [[ -n "$uri" ]] || die "no Debian mirror in the apt sources"
    echo "$uri"
}

rootfs() {
    local key dir
    key="$(echo "bookworm $PACKAGES" | sha256sum | cut -c1-12)"
    dir="$CACHE/rootfs-$key"
    if [[ ! -f "$dir/.complete" ]]; then
        mkdir -p "$CACHE"
        exec 9>"$CACHE/.lock"
        flock 9
        if [[ ! -f "$dir/.complete" ]]; then
            rm -rf "$dir.partial"
            debootstrap --variant=minbase --include="$PACKAGES" bookworm "$dir.partial" "$(mirror)" >"$CACHE/debootstrap.log" 2>&1 ||
                die "debootstrap failed; see $CACHE/debootstrap.log"
            # Services must not start inside the image build; hosts start sshd themselves.
            rm -f "$dir.partial"/etc/ssh/ssh_host_*
            touch "$dir.partial/.complete"
            rm -rf "$dir"
            mv "$dir.partial" "$dir"
        fi
        flock -u 9
    fi
    echo "$dir"
}

bridge_name() { echo "kv${1}br"; }
veth_host() { echo "kv${1}h${2}"; }
netns_name() { echo "kv-${1}-${2}"; }

bridge_up() {
    local run="$1" subnet="$2" br
    br="$(bridge_name "$run")"
    ip link add "$br" type bridge
    ip addr add "${subnet}.1/24" dev "$br"
    ip link set "$br" up
}

bridge_down() {
    local br
    br="$(bridge_name "$1")"
    if ip link show "$br" >/dev/null 2>&1; then ip link del "$br"; fi
}

host_up() {
    local run="$1" name="$2" index="$3" subnet="$4" dir="$5" pubkey_file="$6" volume_mb="$7" shared="$8"
    : "${LAB_PASSWORD:?LAB_PASSWORD must hold the login password}"
    local ns veth base ip
    ns="$(netns_name "$run" "$name")"
    veth="$(veth_host "$run" "$index")"
    base="$(rootfs)"
    ip="${subnet}.$((10 + index))"
    mkdir -p "$dir/upper" "$dir/work" "$dir/merged"
    echo "$ns" >"$dir/netns"
    echo "$shared" >"$dir/shared"

    ip netns add "$ns"
    # A fixed MAC per index: a replaced host keeps its address and MAC, as a VM keeps its Neutron port
    # (and the bridge's neighbour entry stays valid).
    ip link add "$veth" type veth peer name eth0 address "$(printf '02:6b:76:00:%02x:%02x' $((index / 256)) $((index % 256)))" netns "$ns"
    ip link set "$veth" master "$(bridge_name "$run")" up
    ip netns exec "$ns" ip addr add "$ip/24" dev eth0
    ip netns exec "$ns" ip link set eth0 up
    ip netns exec "$ns" ip link set lo up
    echo "$veth" >"$dir/veth"

    if ((volume_mb > 0)); then
        truncate -s "${volume_mb}M" "$dir/volume.img"
        losetup -f --show "$dir/volume.img" >"$dir/loop"
    fi

    # The host's own filesystem, prepared from outside before its sshd starts.
    mkdir -p "$dir/merged"
    mount -t overlay overlay -o "lowerdir=$base,upperdir=$dir/upper,workdir=$dir/work" "$dir/merged"
    echo "$dir/merged" >"$dir/mount"
    chroot "$dir/merged" /bin/bash -s "$name" "$ip" <"$HERE/host-setup.sh"
    install -D -m 0600 "$pubkey_file" "$dir/merged/home/ubuntu/.ssh/authorized_keys"
    chroot "$dir/merged" chown -R ubuntu:ubuntu /home/ubuntu/.ssh
    # Stand-ins for kubeadm/kubectl/kubelet, guards for machine-wide settings, init scripts for services.
    install -D -m 0644 "$HERE/stand-ins/common.sh" "$dir/merged/usr/local/lib/k8s-standin/common.sh"
    install -m 0755 "$HERE"/stand-ins/bin/* "$dir/merged/usr/local/bin/"
    install -m 0755 "$HERE"/stand-ins/sbin/* "$dir/merged/usr/local/sbin/"
    install -m 0755 "$HERE"/stand-ins/init.d/* "$dir/merged/etc/init.d/"
    mkdir -p "$dir/merged/var/lib/k8s-standin"
    umount "$dir/merged"
    rm -f "$dir/mount"
    sshd_start "$run" "$name" "$dir"
}

sshd_start() {
    local run="$1" name="$2" dir="$3" loop_minor=""
    if [[ -f "$dir/loop" ]]; then loop_minor="$(($(stat -c '0x%T' "$(cat "$dir/loop")")))"; fi
    ip netns exec "$(cat "$dir/netns")" unshare --mount --uts --pid --fork --propagation private \
        "$HERE/host-init.sh" "$name" "$(rootfs)" "$dir" "$(cat "$dir/shared")" "$loop_minor" >>"$dir/sshd.log" 2>&1 &
    echo "$!" >"$dir/sshd.pid"
    local i
    # Up to 30 s: many hosts starting at once on a busy machine.
    for i in $(seq 1 600); do
        if ip netns exec "$(cat "$dir/netns")" bash -c 'exec 3<>/dev/tcp/127.0.0.1/22' 2>/dev/null; then return 0; fi
        kill -0 "$(cat "$dir/sshd.pid")" 2>/dev/null || die "sshd of $name exited: $(tail -3 "$dir/sshd.log")"
        sleep 0.05
        : "$i"
    done
    die "sshd of $name did not listen"
}

# Kills every process in the host's network namespace: sshd and whatever its sessions run.
sshd_kill() {
    local dir="$1" ns pids
    ns="$(cat "$dir/netns")"
    pids="$(ip netns pids "$ns" 2>/dev/null || true)"
    if [[ -n "$pids" ]]; then
        # shellcheck disable=SC2086 # one PID per word
        kill -9 $pids 2>/dev/null || true
    fi
    local i
    for i in $(seq 1 100); do
        [[ -z "$(ip netns pids "$ns" 2>/dev/null || true)" ]] && return 0
        sleep 0.05
        : "$i"
    done
}

rekey() {
    local dir="$1"
    rm -f "$dir/upper/etc/ssh/ssh_host_"*
}

link() {
    ip link set "$(veth_host "$1" "$2")" "$3"
}

# Undoes host_up step by step; every step runs even when an earlier one finds its thing already gone.
host_down() {
    local run="$1" name="$2" dir="$3"
    [[ -d "$dir" ]] || return 0
    if [[ -f "$dir/netns" ]]; then
        sshd_kill "$dir"
        # Deleting the namespace also deletes the veth pair (asynchronously).
        ip netns del "$(cat "$dir/netns")" 2>/dev/null || true
    fi
    if [[ -f "$dir/veth" ]]; then ip link del "$(cat "$dir/veth")" 2>/dev/null || true; fi
    if [[ -f "$dir/mount" ]]; then umount "$(cat "$dir/mount")" 2>/dev/null || true; fi
    if [[ -f "$dir/loop" ]]; then losetup -d "$(cat "$dir/loop")" 2>/dev/null || true; fi
    rm -rf "$dir"
    : "$run" "$name"
}

cmd="${1:-}"
shift || true
case "$cmd" in
rootfs) rootfs ;;
bridge-up) bridge_up "$@" ;;
bridge-down) bridge_down "$@" ;;
host-up) host_up "$@" ;;
host-down) host_down "$@" ;;
link) link "$@" ;;
sshd-kill) sshd_kill "$@" ;;
sshd-start) sshd_start "$@" ;;
rekey) rekey "$@" ;;
*) die "usage: see the header of $0" ;;
esac
