#!/usr/bin/env bash
# A lab host's first process, already in its network namespace and in new mount, UTS and PID namespaces
# (so pgrep/pkill on the host see only its own processes): mounts the host's filesystem, then becomes its
# sshd (same PID, 1 in its PID namespace). The mounts go away with the namespace.
# Arguments: NAME ROOTFS DIR SHARED_DIR [LOOP_MINOR]
set -euo pipefail
name="$1"
base="$2"
dir="$3"
shared="$4"
loop_minor="${5:-}"
root="$dir/merged"

hostname "$name"
mount -t overlay overlay -o "lowerdir=$base,upperdir=$dir/upper,workdir=$dir/work" "$root"
mount -t proc proc "$root/proc"
# The stand-ins' cluster state (their "etcd"), one directory for every host of the lab.
mount --bind "$shared" "$root/var/lib/k8s-standin"
mount -t tmpfs -o mode=0755 tmpfs "$root/dev"
for node in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
    IFS=: read -r dev major minor <<<"$node"
    mknod -m 0666 "$root/dev/$dev" c "$major" "$minor"
done
mkdir "$root/dev/pts"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$root/dev/pts"
ln -s pts/ptmx "$root/dev/ptmx"
if [[ -n "$loop_minor" ]]; then mknod -m 0660 "$root/dev/vdb" b 7 "$loop_minor"; fi
mount -t tmpfs -o mode=0755 tmpfs "$root/run"
mkdir -p "$root/run/sshd"
mkdir -m 1777 "$root/run/lock"
chroot "$root" ssh-keygen -A >/dev/null
exec chroot "$root" /usr/sbin/sshd -D -e -o PasswordAuthentication=yes -o UsePAM=no -o PidFile=none
