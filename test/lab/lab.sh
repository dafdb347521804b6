#!/usr/bin/env bash
# Lab hosts for the tests: each host is a network namespace on a private bridge, running a real OpenSSH
# sshd chrooted into an overlay of a cached Debian rootfs. Must run as root.
#
#   lab.sh rootfs                              build (once) and print the cached rootfs directory
#   lab.sh systemd-layer                       build (once) and print the systemd layer over it
#   lab.sh bridge-up   RUN SUBNET              create bridge kv<RUN>br with SUBNET.1/24
#   lab.sh bridge-down RUN                     delete that bridge
#   lab.sh host-up     RUN NAME INDEX SUBNET DIR PUBKEY_FILE VOLUME_MB SHARED_DIR
#                                              start a host at SUBNET.(10+INDEX); state in DIR, which is
#                                              LABDIR/hosts/NAME (see the volumes below); SHARED_DIR
#                                              is the stand-ins' cluster state, the same for every host; the
#                                              login password comes in $LAB_PASSWORD, never on a command line
#   lab.sh host-down   RUN NAME DIR            stop exactly what host-up started
#   lab.sh link        RUN INDEX up|down       take a host's link up or down
#   lab.sh sshd-kill   DIR                     kill the host's sshd and its sessions
#   lab.sh sshd-start  RUN NAME DIR            start sshd again (same namespace and filesystem)
#   lab.sh rekey       DIR                     give the host new SSH host keys (takes effect on sshd-start)
#   lab.sh volume-create LABDIR ID SIZE_MB     a "Cinder volume": sparse file + loop device owned by the lab
#   lab.sh volume-delete LABDIR ID             detach its loop device, remove it (refused while attached)
#   lab.sh volume-attach LABDIR ID HOSTDIR     show it in the host as the next free /dev/vdX with the link
#                                              /dev/disk/by-id/virtio-<ID, 20 chars>; prints /dev/vdX
#   lab.sh volume-detach LABDIR ID HOSTDIR     take it out of the host again
#   lab.sh volumes-down LABDIR                 detach and remove every volume the lab recorded
#
# A volume lives in LABDIR/volumes/ID (volume.img, loop: the loop device it got, attached: the host dir it is
# attached to) and outlives hosts; an attachment is also recorded in HOSTDIR/volumes/ID (the device name and
# the volume's dir), from which host-init.sh recreates the device nodes when the host's sshd starts again.
#
# Everything a host creates is named after RUN and INDEX and recorded in DIR, so teardown removes exactly
# that, also after a failed test. Mounts live in the host's own mount namespace and vanish with it; the host's
# cgroups (host-init.sh: for containers) are listed in DIR/cgroups and removed by host-down. DIR also
# holds the host's /var/lib/containerd (DIR/var-lib-containerd, bind-mounted by host-init.sh: not on the
# overlay root, so containerd's overlayfs snapshotter works), which goes with DIR; for a host that boots
# systemd, on the host's own disk (disk_create).
#
# A lab whose LABDIR/init says "systemd" boots its hosts as a VM boots: Debian's systemd is PID 1 (sshd one
# of its units), over the systemd layer (systemd_layer), and the hosts get no stand-ins of kubeadm, kubectl,
# the kubelet or init scripts (the real ones are installed as on a VM). Other labs' hosts run sshd as PID 1.
set -euo pipefail
# Root's tools (losetup, ip, debootstrap) whatever PATH the caller had (a test or a Pulumi plugin may run it with a short one).
export PATH="/usr/local/sbin:/usr/sbin:/sbin:$PATH"

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

die() { echo "lab: $*" >&2; exit 1; }

# shellcheck source=test/lab/image.sh
source "$HERE/image.sh"
# shellcheck source=test/lab/kubeletHolds.sh
source "$HERE/kubeletHolds.sh"
# shellcheck source=test/lab/disks.sh
source "$HERE/disks.sh"

bridge_name() { echo "kv${1}br"; }
veth_host() { echo "kv${1}h${2}"; }
netns_name() { echo "kv-${1}-${2}"; }

bridge_up() { # RUN THIRD: the lab's bridge on the first 10.231.N.0/24 from N=THIRD on that no interface holds; prints 10.231.N
    local run="$1" third="$2" br tries
    br="$(bridge_name "$run")"
    # Under a lock, so that two labs starting at once never take the same subnet: a second bridge with the same
    # /24 would leave one lab's hosts unreachable, the other's answering at their addresses.
    mkdir -p /run/k8s-vnf-lab
    exec 7>/run/k8s-vnf-lab/subnets.lock
    flock 7
    for ((tries = 0; tries < 250; tries++)); do
        if ! ip -o -4 addr show | grep -q " inet 10\.231\.$third\."; then
            ip link add "$br" type bridge
            ip addr add "10.231.$third.1/24" dev "$br"
            # The subnet's gateway (the lab OpenStack API's gateway_ip) routes nowhere: what a host sends beyond
            # the lab is refused here (ICMP unreachable), never forwarded off the machine.
            sysctl -qw "net.ipv4.conf.$br.forwarding=0"
            ip link set "$br" up
            exec 7>&-
            echo "10.231.$third"
            return
        fi
        third=$((third % 250 + 1))
    done
    echo "lab.sh: every 10.231.N.0/24 is taken by another interface" >&2
    return 1
}

bridge_down() {
    local br
    br="$(bridge_name "$1")"
    if ip link show "$br" >/dev/null 2>&1; then ip link del "$br"; fi
}

host_up() {
    local run="$1" name="$2" index="$3" subnet="$4" dir="$5" pubkey_file="$6" volume_mb="$7" shared="$8"
    : "${LAB_PASSWORD:?LAB_PASSWORD must hold the login password}"
    local ns veth base ip labdir
    ns="$(netns_name "$run" "$name")"
    veth="$(veth_host "$run" "$index")"
    labdir="$(dirname "$(dirname "$dir")")"
    base="$(host_lower "$labdir")"
    ip="${subnet}.$((10 + index))"
    mkdir -p "$dir/merged"
    if [[ "$(cat "$labdir/init" 2>/dev/null)" == systemd ]]; then disk_create "$dir"; else mkdir -p "$dir/upper" "$dir/work"; fi
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
    # A host that boots as a VM gets the default route DHCP gives a VM, via the subnet's gateway: Kubernetes
    # needs one (a Service's virtual IP is routed before kube-proxy's rules translate it).
    if [[ "$(cat "$labdir/init" 2>/dev/null)" == systemd ]]; then ip netns exec "$ns" ip route add default via "${subnet}.1"; fi
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
    install -D -m 0644 "$HERE/stand-ins/common.sh" "$dir/merged/usr/local/lib/k8s-standin/common.sh"
    # Guards for machine-wide settings.
    install -m 0755 "$HERE"/stand-ins/sbin/* "$dir/merged/usr/local/sbin/"
    if [[ "$(cat "$labdir/init" 2>/dev/null)" == systemd ]]; then
        # sshd as the lab's other hosts run it (host-init.sh), as a unit of the host's systemd.
        printf 'PasswordAuthentication yes\nUsePAM no\n' | install -D -m 0644 /dev/stdin "$dir/merged/etc/ssh/sshd_config.d/k8s-vnf-lab.conf"
        node_image "$dir" "$labdir"
    else
        # Stand-ins for kubeadm/kubectl/kubelet, init scripts for services.
        install -m 0755 "$HERE"/stand-ins/bin/* "$dir/merged/usr/local/bin/"
        install -m 0755 "$HERE"/stand-ins/init.d/* "$dir/merged/etc/init.d/"
        install -m 0644 "$HERE"/stand-ins/lib/* "$dir/merged/usr/local/lib/k8s-standin/"
    fi
    # udevadm only where the image has none (no udevd runs in a lab host: see stand-ins/udev/udevadm).
    if [[ ! -e "$dir/merged/usr/bin/udevadm" && ! -e "$dir/merged/bin/udevadm" ]]; then
        install -m 0755 "$HERE/stand-ins/udev/udevadm" "$dir/merged/usr/local/sbin/udevadm"
    fi
    mkdir -p "$dir/merged/var/lib/k8s-standin"
    umount "$dir/merged"
    rm -f "$dir/mount"
    if [[ -f "$dir/disk.img" ]]; then umount "$dir/disk"; fi
    sshd_start "$run" "$name" "$dir"
}

# The block devices host-init.sh makes in the host's /dev, one "NAME MAJOR MINOR [SERIAL]" line each: the
# host's own volume as vdb, then every cloud volume attached to it that still exists.
write_devices() {
    local dir="$1" record id device voldir
    : >"$dir/devices"
    if [[ -f "$dir/loop" ]]; then echo "vdb $(dev_numbers "$(cat "$dir/loop")")" >>"$dir/devices"; fi
    for record in "$dir"/volumes/*; do
        [[ -f "$record" ]] || continue
        id="${record##*/}"
        { read -r device; read -r voldir; } <"$record"
        [[ -f "$voldir/loop" ]] || continue
        echo "$device $(dev_numbers "$(cat "$voldir/loop")") virtio-${id:0:20}" >>"$dir/devices"
    done
}

sshd_start() {
    local run="$1" name="$2" dir="$3" labdir
    # The lab's volume lock (hosts live in LABDIR/hosts/NAME) until the host made its devices, so that an
    # attachment lands either in the devices file or in the running host.
    labdir="$(dirname "$(dirname "$dir")")"
    mkdir -p "$labdir/volumes"
    exec 7>>"$labdir/volumes/.lock"
    flock 7
    write_devices "$dir"
    # nsenter --net, not `ip netns exec`, which remounts /sys: host-init.sh finds the machine's cgroup
    # hierarchies under /sys/fs/cgroup.
    nsenter --net="/run/netns/$(cat "$dir/netns")" unshare --mount --uts --pid --fork --propagation private \
        "$HERE/host-init.sh" "$name" "$(host_lower "$labdir")" "$dir" "$(cat "$dir/shared")" >>"$dir/sshd.log" 2>&1 7>&- &
    echo "$!" >"$dir/sshd.pid"
    # Up to 60 s: many hosts starting at once on a busy machine (it was 600 polls of 50 ms, each poll itself
    # slow there); 300 s for one that boots systemd first, as a VM boots (on 2 busy cores, with another
    # suite's cluster beside it, a boot took longer than 30 s; Nova gives a boot far longer). Wall-clock seconds.
    local wait=60
    if [[ "$(cat "$labdir/init" 2>/dev/null)" == systemd ]]; then wait=300; fi
    local deadline=$((SECONDS + wait))
    while ((SECONDS < deadline)); do
        if ip netns exec "$(cat "$dir/netns")" bash -c 'exec 3<>/dev/tcp/127.0.0.1/22' 2>/dev/null; then
            exec 7>&-
            return 0
        fi
        kill -0 "$(cat "$dir/sshd.pid")" 2>/dev/null || die "sshd of $name exited: $(tail -3 "$dir/sshd.log")"
        sleep 0.05
    done
    die "sshd of $name did not listen within $wait s"
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
    [[ ! -f "$dir/disk.img" ]] || die "rekey: not for a host with a disk of its own"
    rm -f "$dir/upper/etc/ssh/ssh_host_"*
}

link() {
    ip link set "$(veth_host "$1" "$2")" "$3"
}

# The host's cgroups (host-init.sh records them in DIR/cgroups and DIR/cgroups.earlier), deepest first, once its processes are gone:
# an empty cgroup's directory outlives them. Only directories named as host-init.sh names the host's own.
cgroups_down() {
    local dir="$1" cgroup left i
    [[ -f "$dir/cgroups" ]] || return 0
    for i in $(seq 1 100); do
        left=0
        while read -r _ _ cgroup; do
            [[ "$cgroup" == /*/k8s-vnf-kv-* && -d "$cgroup" ]] || continue
            find "$cgroup" -depth -type d -exec rmdir {} + 2>/dev/null || left=1
        done < <(cat "$dir/cgroups" "$dir/cgroups.earlier" 2>/dev/null)
        ((left)) || return 0
        # A killed process leaves its cgroup a moment after it is gone from the namespace.
        sleep 0.05
        : "$i"
    done
    echo "lab: cgroups of $dir still in use: left behind" >&2
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
    cgroups_down "$dir"
    if [[ -f "$dir/veth" ]]; then ip link del "$(cat "$dir/veth")" 2>/dev/null || true; fi
    if [[ -f "$dir/mount" ]]; then umount "$(cat "$dir/mount")" 2>/dev/null || true; fi
    if [[ -f "$dir/disk.img" ]] && mountpoint -q "$dir/disk"; then umount "$dir/disk" 2>/dev/null || true; fi
    # The host's own volume goes with it; cloud volumes only lose their attachment (a deleted VM's volumes
    # become available again).
    if [[ -f "$dir/loop" ]]; then loop_detach "$(cat "$dir/loop")" "$dir/volume.img"; fi
    local record voldir
    for record in "$dir"/volumes/*; do
        [[ -f "$record" ]] || continue
        voldir="$(sed -n 2p "$record")"
        if [[ "$(cat "$voldir/attached" 2>/dev/null)" == "$dir" ]]; then rm -f "$voldir/attached"; fi
    done
    rm -rf "$dir"
    : "$run" "$name"
}

# host_pid HOSTDIR: the PID of the host's first process while the host runs, else nothing.
host_pid() {
    local pid
    pid="$(cat "$1/sshd.pid" 2>/dev/null || true)"
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then echo "$pid"; fi
}

# host_init HOSTDIR: the PID (on the test machine) of the running host's first process, else nothing.
host_init() {
    local pid
    pid="$(host_pid "$1")"
    [[ -n "$pid" ]] || return 0
    # One PID and a space, no newline.
    pid="$(cat "/proc/$pid/task/$pid/children" 2>/dev/null)" || return 0
    echo "${pid%% *}"
}

# in_host HOSTDIR COMMAND...: COMMAND in the running host's namespaces, at its first process's root (its own
# filesystem: sshd chrooted into it, or systemd on it as its mount namespace's root).
in_host() {
    local dir="$1" pid
    shift
    pid="$(host_init "$dir")"
    [[ -n "$pid" ]] || return 0
    nsenter -t "$pid" -m -u -n -p -r -w -- "$@"
}

cmd="${1:-}"
shift || true
case "$cmd" in
rootfs) rootfs ;;
systemd-layer) systemd_layer ;;
bridge-up) bridge_up "$@" ;;
bridge-down) bridge_down "$@" ;;
host-up) host_up "$@" ;;
host-down) host_down "$@" ;;
link) link "$@" ;;
sshd-kill) sshd_kill "$@" ;;
sshd-start) sshd_start "$@" ;;
rekey) rekey "$@" ;;
volume-create) volume_create "$@" ;;
volume-delete) volume_delete "$@" ;;
volume-attach) volume_attach "$@" ;;
volume-detach) volume_detach "$@" ;;
volumes-down) volumes_down "$@" ;;
kubelet-hold) kubelet_hold "$@" ;;
kubelet-release) kubelet_release "$@" ;;
*) die "usage: see the header of $0" ;;
esac
