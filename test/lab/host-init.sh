#!/usr/bin/env bash
# A lab host's first process, already in its network namespace and in new mount, UTS and PID namespaces
# (so pgrep/pkill on the host see only its own processes): mounts the host's filesystem, then becomes its
# sshd (same PID, 1 in its PID namespace). The mounts go away with the namespace.
# Arguments: NAME ROOTFS DIR SHARED_DIR; DIR/devices lists the host's disks, one "NAME MAJOR MINOR [SERIAL]"
# line each (lab.sh write_devices).
set -euo pipefail
name="$1"
base="$2"
dir="$3"
shared="$4"
root="$dir/merged"

hostname "$name"
mount -t overlay overlay -o "lowerdir=$base,upperdir=$dir/upper,workdir=$dir/work" "$root"
mount -t proc proc "$root/proc"
# The stand-ins' cluster state (their "etcd"), one directory for every host of the lab.
mount --bind "$shared" "$root/var/lib/k8s-standin"
# containerd's root on a filesystem of the host's own (in its state dir, so it stays across power cycles and
# goes with the host, as a VM's disk): the root filesystem is an overlayfs, and the kernel refuses an overlayfs
# as the upperdir of another ("filesystem on ... not supported as upperdir"), which containerd's default
# overlayfs snapshotter mounts for every snapshot with a parent (a second layer, a container).
install -d -m 0711 "$dir/var-lib-containerd" "$root/var/lib/containerd"
mount --bind "$dir/var-lib-containerd" "$root/var/lib/containerd"
mount -t tmpfs -o mode=0755 tmpfs "$root/dev"
for node in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
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
mount -t tmpfs -o mode=0755 tmpfs "$root/run"
mkdir -p "$root/run/sshd"
mkdir -m 1777 "$root/run/lock"
# What a booting Debian does that the lab needs (a power-on is this script run again): udev's coldplug (the
# by-uuid links of the disks' filesystems, through the lab's udevadm stand-in), the fstab mounts, rpcbind
# (rcS.d) and nfs-kernel-server (rc2.d) when enabled, as they are once installed; the latter serves again
# what /etc/exports says, or says "no exports" and does nothing. Other services stay off: the lab's cloud
# starts what it needs.
if [[ -x "$root/usr/local/sbin/udevadm" ]]; then
    chroot "$root" /usr/local/sbin/udevadm trigger --action=add --subsystem-match=block || echo "host-init: udevadm trigger failed" >&2
fi
chroot "$root" mount -a || echo "host-init: mount -a failed" >&2
enabled() { compgen -G "$root/etc/$1/S[0-9][0-9]$2" >/dev/null; }
if enabled rcS.d rpcbind; then chroot "$root" /etc/init.d/rpcbind start >/dev/null || echo "host-init: rpcbind did not start" >&2; fi
if enabled rc2.d nfs-kernel-server; then
    # Done before sshd listens, so no start over SSH can overlap it; why it failed goes to the host's sshd.log.
    if ! nfs_out="$(chroot "$root" /etc/init.d/nfs-kernel-server start 2>&1)"; then
        echo "host-init: nfs-kernel-server did not start:" >&2
        echo "$nfs_out" >&2
    fi
fi
chroot "$root" ssh-keygen -A >/dev/null
exec chroot "$root" /usr/sbin/sshd -D -e -o PasswordAuthentication=yes -o UsePAM=no -o PidFile=none
