#!/usr/bin/env bash
# Runs once inside a new lab host's filesystem (chroot): identity, login user, sudo, sshd prerequisites.
# Arguments: NAME IP; the login password comes in LAB_PASSWORD.
set -euo pipefail
name="$1"
ip="$2"
: "${LAB_PASSWORD:?LAB_PASSWORD must hold the login password}"

echo "$name" >/etc/hostname
printf '127.0.0.1 localhost\n%s %s\n' "$ip" "$name" >/etc/hosts
id ubuntu >/dev/null 2>&1 || useradd --create-home --shell /bin/bash ubuntu
echo "ubuntu:${LAB_PASSWORD}" | chpasswd
# sudo asks for the password, as on a cloud image with password login: the transport must cope.
echo 'ubuntu ALL=(ALL) ALL' >/etc/sudoers.d/ubuntu
chmod 0440 /etc/sudoers.d/ubuntu
mkdir -p /home/ubuntu/.ssh
chmod 0700 /home/ubuntu/.ssh
# libmount and nfs-ganesha read the mount table through /etc/mtab, which a booted Debian has as this link.
[[ -e /etc/mtab || -L /etc/mtab ]] || ln -s ../proc/self/mounts /etc/mtab
