#!/usr/bin/env bash
# A lab host's first process, already in its network namespace and in new mount, UTS and PID namespaces
# (so pgrep/pkill on the host see only its own processes): enters cgroups of the host's own and a cgroup
# namespace rooted there (see below), mounts the host's filesystem, then becomes its sshd, or its systemd in a
# lab that boots systemd (same PID, 1 in its PID namespace). The mounts go away with the namespace.
# Arguments: NAME LOWER DIR SHARED_DIR (LOWER: the overlay's lower directories, lab.sh host_lower) (after --in-cgroup-namespace when it runs itself again inside the new
# cgroup namespace, see below); DIR/devices lists the host's disks, one "NAME MAJOR MINOR [SERIAL]"
# line each (lab.sh write_devices).
#
# cgroups, for containers (`ctr run`: runc places every container in a cgroup, and panics without a cgroup
# filesystem at /sys/fs/cgroup): in every cgroup hierarchy the test machine mounts, a cgroup of the host's
# own, k8s-vnf-<its netns name>, below the cgroup this script started in (the limits the machine puts on the
# tests still apply); this process moves into them, then into a new cgroup namespace (unshare --cgroup), so
# the host's processes see those cgroups as "/", as a VM sees its own (in the cpu controller's hierarchy it
# goes back to where it was: see below); the host's /sys/fs/cgroup mounts the same hierarchies seen from there. A container's cgroup (containerd: /NAMESPACE/ID) is so below the host's
# and two hosts running containers of the same name do not share one. DIR/cgroups records them, one
# "CONTROLLERS MOUNT-NAME CGROUP-DIR" line each (DIR/cgroups.earlier those of earlier starts), which lab.sh
# host-down removes once the host's processes are gone (an empty cgroup directory outlives its processes). Only the layout the test machines have is done:
# cgroup v1 hierarchies (and a cgroup2 one beside them, "hybrid") under a tmpfs /sys/fs/cgroup, as systemd
# mounts them; on a cgroup2-only machine /sys/fs/cgroup is that hierarchy, where runc would also need the
# controllers enabled below a cgroup holding the host's processes (not tried).
set -euo pipefail
if [[ "${1:-}" == --in-cgroup-namespace ]]; then
    shift
    in_cgroup_namespace=yes
else
    in_cgroup_namespace=no
fi
name="$1"
base="$2"
dir="$3"
shared="$4"
root="$dir/merged"

# cgroup_mount CONTROLLERS: where the test machine mounts that hierarchy (CONTROLLERS as /proc/self/cgroup
# names them: "cpu,cpuacct", "name=systemd"; empty for cgroup2), from its root; nothing when it does not.
cgroup_mount() {
    awk -v want="$1" '
        {
            for (i = 7; $i != "-"; i++) continue
            fstype = $(i + 1)
            if ($4 != "/" || (fstype != "cgroup" && fstype != "cgroup2")) next
            if (want == "") { if (fstype == "cgroup2") { print $5; exit } next }
            if (fstype != "cgroup") next
            n = split(want, wanted, ","); m = split($(i + 3), options, ","); found = 0
            for (k = 1; k <= n; k++) for (j = 1; j <= m; j++) if (options[j] == wanted[k]) found++
            if (found == n) { print $5; exit }
        }' /proc/self/mountinfo
}

if [[ "$in_cgroup_namespace" == no ]]; then
    cgroup="k8s-vnf-$(cat "$dir/netns")"
    : >"$dir/cgroups.new"
    # Read whole before the first move: the file changes as this process moves.
    memberships="$(cat /proc/self/cgroup)"
    while IFS=: read -r _ controllers path; do
        mnt="$(cgroup_mount "$controllers")"
        [[ -n "$mnt" ]] || continue
        own="$mnt${path%/}/$cgroup"
        mkdir -p "$own"
        # What a power-off leaves behind (empty cgroups of containers killed with the host) goes, as with a
        # VM's power-off.
        find "$own" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null || true
        # A new cpuset cgroup has no CPUs and no memory nodes (unless its parent's cgroup.clone_children):
        # its parent's, or no process may join it.
        for file in cpuset.cpus cpuset.mems; do
            if [[ -f "$own/$file" && -z "$(cat "$own/$file")" ]]; then cat "${own%/*}/$file" >"$own/$file"; fi
        done
        echo "${controllers:-cgroup2} ${mnt##*/} $own" >>"$dir/cgroups.new"
        # 0: the writing process, this shell.
        echo 0 >"$own/cgroup.procs"
    done <<<"$memberships"
    # The ones of an earlier start (another caller may have started the host in other cgroups) stay listed
    # for host-down in DIR/cgroups.earlier.
    if [[ -f "$dir/cgroups" ]]; then
        sort -u "$dir/cgroups" "$dir/cgroups.earlier" -o "$dir/cgroups.earlier" 2>/dev/null || sort -u "$dir/cgroups" -o "$dir/cgroups.earlier"
    fi
    mv "$dir/cgroups.new" "$dir/cgroups"
    # A cgroup namespace affects the caller itself: the same process (PID 1) goes on inside it.
    exec unshare --cgroup "$0" --in-cgroup-namespace "$@"
fi

# The cpu controller's hierarchy: a cgroup there is a scheduling group, whose processes share one CPU weight.
# This process goes back to where it started (the cgroup namespace keeps its root): the host's processes
# compete for the CPU one by one, as the machine's do (a host of its own there changed the tests' timing
# enough to lose a race in the kubeadm suite's entire-cluster heal); its containers still get cgroups below
# the host's, one scheduling group each, as on a machine of their own. Seen from the host, its processes'
# cpu cgroup is "/..".
while read -r controllers _ own; do
    if [[ ",$controllers," == *,cpu,* ]]; then echo 0 >"${own%/*}/cgroup.procs"; fi
done <"$dir/cgroups"

hostname "$name"
# The host's own disk, when it has one (lab.sh disk_create), once the host's last boot or its setup has let go
# of it (its mount goes with its mount namespace, a moment after its last process). The kernel frees an
# autoclear loop device after the unmount, writing back what the image still holds: with several hosts
# setting up at once on a busy machine that took longer than 10 s, so up to 120 s (wall clock).
if [[ -f "$dir/disk.img" ]]; then
    deadline=$((SECONDS + 120))
    while ((SECONDS < deadline)); do
        [[ -z "$(losetup -j "$dir/disk.img")" ]] && break
        sleep 0.1
    done
    [[ -z "$(losetup -j "$dir/disk.img")" ]] || { echo "host-init: $dir/disk.img is still in use" >&2; exit 1; }
    mount -o loop "$dir/disk.img" "$dir/disk"
fi
mount -t overlay overlay -o "lowerdir=$base,upperdir=$dir/upper,workdir=$dir/work" "$root"
mount -t proc proc "$root/proc"
# The stand-ins' cluster state (their "etcd"), one directory for every host of the lab.
mount --bind "$shared" "$root/var/lib/k8s-standin"
# The real tools the lab gives its hosts (LABDIR/tools, "NAME DIR" lines: Lab.giveTools), read-only at
# /opt/k8s-vnf-lab/NAME, where the stand-ins look for them (stand-ins/lib/static-pods.sh).
labdir="$(dirname "$(dirname "$dir")")"
if [[ -f "$labdir/tools" ]]; then
    while read -r tool bin; do
        mkdir -p "$root/opt/k8s-vnf-lab/$tool"
        mount --bind "$bin" "$root/opt/k8s-vnf-lab/$tool"
        mount -o remount,bind,ro "$root/opt/k8s-vnf-lab/$tool"
    done <"$labdir/tools"
fi
# containerd's root on a filesystem of the host's own (in its state dir, so it stays across power cycles and
# goes with the host, as a VM's disk): the root filesystem is an overlayfs, and the kernel refuses an overlayfs
# as the upperdir of another ("filesystem on ... not supported as upperdir"), which containerd's default
# overlayfs snapshotter mounts for every snapshot with a parent (a second layer, a container).
install -d -m 0711 "$dir/var-lib-containerd" "$root/var/lib/containerd"
mount --bind "$dir/var-lib-containerd" "$root/var/lib/containerd"
mount -t tmpfs -o mode=0755 tmpfs "$root/dev"
# kmsg: the kernel log, as a VM has it (the kubelet watches it for OOM kills).
for node in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0 kmsg:1:11; do
    IFS=: read -r dev major minor <<<"$node"
    mknod -m 0666 "$root/dev/$dev" c "$major" "$minor"
done
mkdir "$root/dev/pts"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$root/dev/pts"
ln -s pts/ptmx "$root/dev/ptmx"
# As in every Linux /dev (systemd-tmpfiles' static nodes): bash's process substitution needs /dev/fd.
ln -s /proc/self/fd "$root/dev/fd"
ln -s /proc/self/fd/0 "$root/dev/stdin"
ln -s /proc/self/fd/1 "$root/dev/stdout"
ln -s /proc/self/fd/2 "$root/dev/stderr"
# POSIX shared memory, as systemd mounts it at boot (mount-setup.c: tmpfs, mode 1777): Python's
# multiprocessing locks (ansible-playbook's worker processes) live there.
mkdir "$root/dev/shm"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/dev/shm"
# The disks, as the kernel and udev show a VM's virtio disks: /dev/vdX, and for a Cinder volume the link
# udev's 60-persistent-storage.rules makes from the virtio serial (the volume id cut to 20 characters).
if [[ -f "$dir/devices" ]]; then
    while read -r dev major minor serial; do
        mknod -m 0660 "$root/dev/$dev" b "$major" "$minor"
        if [[ -n "$serial" ]]; then
            mkdir -p "$root/dev/disk/by-id"
            ln -s "../../$dev" "$root/dev/disk/by-id/$serial"
        fi
    done <"$dir/devices"
fi
# /sys holds only the cgroup hierarchies and the host's network interfaces (no whole sysfs: the machine's
# devices are none of the host's business); read-only, as systemd mounts /sys/fs/cgroup's tmpfs.
mount -t tmpfs -o mode=0755,nosuid,nodev,noexec tmpfs "$root/sys"
mkdir -p "$root/sys/class/net" "$root/sys/devices/virtual/net" "$root/sys/devices/system/cpu" "$root/sys/devices/system/node"
if [[ "$(stat -f -c %T /sys/fs/cgroup)" == cgroup2fs ]]; then
    mkdir "$root/sys/fs" "$root/sys/fs/cgroup"
    mount -o remount,ro,bind "$root/sys"
    mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "$root/sys/fs/cgroup"
else
    mkdir -p "$root/sys/fs/cgroup"
    mount -o remount,ro,bind "$root/sys"
    mount -t tmpfs -o mode=0755,nosuid,nodev,noexec tmpfs "$root/sys/fs/cgroup"
    while read -r controllers mount_name _; do
        mkdir "$root/sys/fs/cgroup/$mount_name"
    done <"$dir/cgroups"
    mount -o remount,ro,bind "$root/sys/fs/cgroup"
    while read -r controllers mount_name _; do
        if [[ "$controllers" == cgroup2 ]]; then
            mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "$root/sys/fs/cgroup/$mount_name"
        else
            mount -t cgroup -o "nosuid,nodev,noexec,$controllers" cgroup "$root/sys/fs/cgroup/$mount_name"
        fi
    done <"$dir/cgroups"
fi
# A sysfs mounted in this network namespace lists its own interfaces only (sysfs tags net devices with their
# namespace): its class/net and the devices its links point to, as a VM has them. `ip` needs none of it, but
# Ansible's network facts (ansible_all_ipv4_addresses, which kubespray checks every node's `ip` against) list
# the interfaces from /sys/class/net.
sysfs="$(mktemp -d)"
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$sysfs"
mount --bind "$sysfs/class/net" "$root/sys/class/net"
mount --bind "$sysfs/devices/virtual/net" "$root/sys/devices/virtual/net"
# The CPUs and memory nodes the host runs on (the machine's: a lab host shares them), read-only, as a VM's sysfs
# lists its virtual CPUs: the kubelet's cAdvisor counts the node's CPUs from there (no CPUs, no capacity).
for part in devices/system/cpu devices/system/node; do
    if [[ -d "$sysfs/$part" ]]; then
        mount --bind "$sysfs/$part" "$root/sys/$part"
        mount -o remount,bind,ro "$root/sys/$part"
    fi
done
umount "$sysfs"
rmdir "$sysfs"
mount -t tmpfs -o mode=0755 tmpfs "$root/run"
mkdir -p "$root/run/sshd"
mkdir -m 1777 "$root/run/lock"
# What a booting Debian does that the lab needs (a power-on is this script run again): udev's coldplug (the
# by-uuid links of the disks' filesystems, through the lab's udevadm stand-in), the fstab mounts, rpcbind
# (rcS.d) and nfs-kernel-server (rc2.d) when enabled, as they are once installed; the latter serves again
# what /etc/exports says, or says "no exports" and does nothing. Other services stay off: the lab's cloud
# starts what it needs. A host booting systemd leaves the mounts and services to it.
if [[ -x "$root/usr/local/sbin/udevadm" ]]; then
    chroot "$root" /usr/local/sbin/udevadm trigger --action=add --subsystem-match=block || echo "host-init: udevadm trigger failed" >&2
fi
if [[ "$(cat "$labdir/init" 2>/dev/null)" != systemd ]]; then chroot "$root" mount -a || echo "host-init: mount -a failed" >&2; fi
enabled() { [[ "$(cat "$labdir/init" 2>/dev/null)" != systemd ]] && compgen -G "$root/etc/$1/S[0-9][0-9]$2" >/dev/null; }
if enabled rcS.d rpcbind; then chroot "$root" /etc/init.d/rpcbind start >/dev/null || echo "host-init: rpcbind did not start" >&2; fi
if enabled rc2.d nfs-kernel-server; then
    # Done before sshd listens, so no start over SSH can overlap it; why it failed goes to the host's sshd.log.
    if ! nfs_out="$(chroot "$root" /etc/init.d/nfs-kernel-server start 2>&1)"; then
        echo "host-init: nfs-kernel-server did not start:" >&2
        echo "$nfs_out" >&2
    fi
fi
chroot "$root" ssh-keygen -A >/dev/null
if [[ "$(cat "$labdir/init" 2>/dev/null)" == systemd ]]; then
    # As systemd-nspawn starts a container's init: a clean environment naming the container manager (systemd
    # then leaves the kernel's settings and devices alone), its own messages to the console (the host has none,
    # and never to the machine's kernel log), the units' to its journal. sshd is its unit, with the lab's
    # options (lab.sh host_up).
    # The one unit this kernel cannot start: it has no rpc_pipefs (no kernel NFS; the lab's NFS server is
    # nfs-ganesha), so its mount is masked for this boot, as `systemctl mask --runtime` does.
    if ! grep -qw rpc_pipefs /proc/filesystems; then
        mkdir -p "$root/run/systemd/system"
        ln -s /dev/null "$root/run/systemd/system/run-rpc_pipefs.mount"
    fi
    # The host's filesystem becomes its mount namespace's root (pivot_root(2)'s ".", "." idiom, as systemd-nspawn
    # does), not a chroot: runc joins a running container's mount namespace for an exec (`kubectl exec`), which
    # takes the namespace's root; under a chroot that root is the test machine's, and the exec found the
    # machine's files where the container's should be.
    cd "$root"
    pivot_root . .
    umount -l .
    cd /
    exec /usr/bin/env -i container=k8s-vnf-lab /lib/systemd/systemd --log-target=console --show-status=yes
fi
exec chroot "$root" /usr/sbin/sshd -D -e -o PasswordAuthentication=yes -o UsePAM=no -o PidFile=none
