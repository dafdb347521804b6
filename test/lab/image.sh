#!/usr/bin/env bash
# The lab hosts' "VM image" (sourced by lab.sh, which defines HERE and die): the cached Debian rootfs every
# host's filesystem is an overlay of, the systemd layer over it for hosts that boot systemd, and what such a
# host's image has besides (node_image). Cached in CACHE, built once under a lock.

CACHE="${K8S_VNF_LAB_CACHE:-/var/cache/k8s-vnf-lab}"
# nfs-kernel-server and nfs-common: the real exportfs, nfs.conf and nfsconf; nfs-ganesha(-vfs): the userspace NFS
# server the nfs-kernel-server stand-in runs (it also pulls in dbus, whose daemon it does without); rpcbind:
# started at boot (host-init.sh); libnfs-utils: the userspace NFS client (nfs-cp, nfs-cat, nfs-ls).
# containerd: the real daemon and ctr (stand-ins/init.d/containerd runs it; it pulls in runc). docker-registry:
# the private registry (Distribution 2.8.2) the registry tests serve images from, run by the package's own
# /etc/init.d/docker-registry (start-stop-daemon, user docker-registry, `serve` its config.yml, as the package's
# systemd unit does), which lab hosts use as it is; skopeo: pushes image archives
# to it and inspects them; apache2-utils: htpasswd for the registry's users; openssl: the test CA, the
# registry's certificate and `s_client` requests to it; containernetworking-plugins: the provider of the virtual
# container-network-stack that skopeo's golang-github-containers-common depends on (debootstrap does not pick
# providers of virtual packages; these are the CNI plugins, as apt would choose); curl: what the registry step
# checks /v2/ with (an Ubuntu cloud image has it); conntrack: a command kubeadm's preflight requires, which the
# program installs where it is missing (the lab's hosts have no package mirror to install it from). ansible: Debian's Ansible 7.7 (the community collections kubespray
# needs, e.g. ansible.utils for its `ipaddr` netaddr check, over ansible-core 2.14, which it pulls in; kubespray
# v2.23's requirements.txt pins ansible==7.6.0), python3-netaddr and python3-jmespath (kubespray's
# requirements.txt pins netaddr and jmespath), python3-cffi-backend (the provider of the virtual cffi API that
# python3-cryptography depends on, which debootstrap does not pick), sshpass: ansible-playbook's password logins (ansible_password).
# The kubespray stand-in (stand-ins/kubespray) runs on them. nginx: Debian's nginx, which the `nginx` image of
# seed 003's CNF package is made from (test/support/kubeImages.ts); no host runs it.
PACKAGES="openssh-server,sudo,iproute2,conntrack,procps,e2fsprogs,util-linux,haproxy,keepalived,socat,containerd,nfs-kernel-server,nfs-common,rpcbind,nfs-ganesha,nfs-ganesha-vfs,libnfs-utils,docker-registry,skopeo,containernetworking-plugins,apache2-utils,openssl,curl,ansible,ansible-core,python3-netaddr,python3-jmespath,python3-cffi-backend,sshpass,nginx"

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

# What a lab host that boots its own init (LABDIR/init says "systemd": Lab.bootSystemd) has over the rootfs:
# Debian's systemd as PID 1 and the D-Bus system bus (runc's systemd cgroup driver, which the product
# configures containerd and the kubelet for, asks systemd over D-Bus for a scope per container).
SYSTEMD_PACKAGES="systemd systemd-sysv dbus"

# A layer over the rootfs, built once (cached beside it): the overlay upper directory of an apt-get install
# of SYSTEMD_PACKAGES, done in a mount namespace of its own (its mounts go with it). At boot sshd, containerd
# (enabled as its package leaves it: the product installs it where it is missing) and systemd's own units
# start; the other services the one rootfs carries for every role (HAProxy, keepalived, the registry, NFS)
# are disabled, as on a VM that never installed them: the product's steps start what they need.
systemd_layer() {
    local base key dir
    base="$(rootfs)"
    key="$({ echo "${base##*/} $SYSTEMD_PACKAGES"; declare -f systemd_layer; } | sha256sum | cut -c1-12)"
    dir="$CACHE/systemd-$key"
    if [[ ! -f "$dir/.complete" ]]; then
        exec 9>"$CACHE/.lock"
        flock 9
        if [[ ! -f "$dir/.complete" ]]; then
            rm -rf "$dir.partial"
            mkdir -p "$dir.partial/upper" "$dir.partial/work" "$dir.partial/merged"
            # shellcheck disable=SC2016 # expanded by the inner shell
            unshare --mount --propagation private bash -euc '
                base="$1" dir="$2" packages="$3"
                mount -t overlay overlay -o "lowerdir=$base,upperdir=$dir/upper,workdir=$dir/work" "$dir/merged"
                mount -t proc proc "$dir/merged/proc"
                mount --rbind /dev "$dir/merged/dev"
                mount --bind /etc/resolv.conf "$dir/merged/etc/resolv.conf"
                # shellcheck disable=SC2086 # one package per word
                chroot "$dir/merged" env DEBIAN_FRONTEND=noninteractive bash -c "apt-get update -q && apt-get install -y -q --no-install-recommends $packages && apt-get clean"
                find "$dir/merged/etc/systemd/system" -path "*.wants/*" -name "*.service" ! -name ssh.service ! -name containerd.service -type l -delete
            ' systemd-layer "$base" "$dir.partial" "$SYSTEMD_PACKAGES" >"$CACHE/systemd-layer.log" 2>&1 ||
                die "the systemd layer failed; see $CACHE/systemd-layer.log"
            rm -rf "$dir.partial/upper/var/lib/apt/lists" "$dir.partial/work" "$dir.partial/merged"
            mv "$dir.partial/upper" "$dir.partial/layer"
            touch "$dir.partial/.complete"
            rm -rf "$dir"
            mv "$dir.partial" "$dir"
        fi
        flock -u 9
    fi
    echo "$dir/layer"
}

# What the lab's VM image has on a host that boots systemd (in DIR/merged), beside the rootfs: the runc shim
# (node/runc), and when the lab gives its hosts Kubernetes (LABDIR/tools "kube"), the kubelet, kubeadm and
# kubectl as their packages install them (the binaries at /usr/bin, here links to the lab's read-only copy;
# the kubelet's unit and kubeadm's drop-in of kubernetes/release; the kubelet enabled, as its package's
# postinst leaves it); with "cni", the CNI plugins the kubernetes-cni package installs (/opt/cni/bin, a folder
# the pod network's DaemonSet adds its own plugin to); with "images", the images its containerd is preloaded
# with (node/k8s-vnf-lab-images.service).
node_image() {
    local root="$1/merged" labdir="$2" tool cni
    install -m 0755 "$HERE/node/runc" "$root/usr/local/sbin/runc"
    if grep -q '^kube ' "$labdir/tools" 2>/dev/null; then
        for tool in kubelet kubeadm kubectl; do ln -sfn "/opt/k8s-vnf-lab/kube/$tool" "$root/usr/bin/$tool"; done
        install -D -m 0644 "$HERE/node/kubelet.service" "$root/lib/systemd/system/kubelet.service"
        install -D -m 0644 "$HERE/node/10-kubeadm.conf" "$root/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf"
        echo "KUBELET_EXTRA_ARGS=" | install -D -m 0644 /dev/stdin "$root/etc/default/kubelet"
        mkdir -p "$root/etc/kubernetes/manifests" "$root/var/lib/kubelet"
        ln -sfn /lib/systemd/system/kubelet.service "$root/etc/systemd/system/multi-user.target.wants/kubelet.service"
    fi
    cni=$(sed -n 's/^cni //p' "$labdir/tools" 2>/dev/null || true)
    if [[ -n "$cni" ]]; then
        mkdir -p "$root/etc/cni/net.d"
        for tool in bridge host-local loopback portmap; do install -D -m 0755 "$cni/$tool" "$root/opt/cni/bin/$tool"; done
    fi
    if grep -q '^images ' "$labdir/tools" 2>/dev/null; then
        install -m 0644 "$HERE/node/k8s-vnf-lab-images.service" "$root/lib/systemd/system/k8s-vnf-lab-images.service"
        ln -sfn /lib/systemd/system/k8s-vnf-lab-images.service "$root/etc/systemd/system/multi-user.target.wants/k8s-vnf-lab-images.service"
    fi
}

# The lower directories of a host's filesystem: the rootfs, under the systemd layer when the lab boots systemd.
host_lower() {
    if [[ "$(cat "$1/init" 2>/dev/null)" == systemd ]]; then echo "$(systemd_layer):$(rootfs)"; else rootfs; fi
}
