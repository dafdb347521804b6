#!/usr/bin/env bash
# Prepares a Kubernetes node (sent after lib.sh and containerdLogins.sh, whose block of config.toml it keeps): hostname, /etc/hosts entries, swap, kernel modules and
# sysctls, proxy settings for apt, containerd and kubelet, containerd with the systemd cgroup driver and
# kubeadm's sandbox image, and kubelet/kubeadm/kubectl at one pinned version. Every part checks before it
# changes; safe to run twice.
#
#   nodePrep.sh apply  NAME VERSION REPOSITORY IMAGE_REPOSITORY [IP HOSTNAME]...
#                      IMAGE_REPOSITORY: where kubeadm's images come from ("" for kubeadm's default)
#                      with http_proxy, https_proxy and no_proxy exported ahead of the script (a proxy URL
#                      may hold a password: it never goes on a command line)
#   nodePrep.sh report             print what a refresh compares: hostname, versions, hosts entries
#   nodePrep.sh registry-hosts-dir a containerd configuration on stdin, with config_path set, on stdout
#   nodePrep.sh sandbox-image IMAGE  a containerd configuration on stdin, its sandbox image IMAGE, on stdout
action="$1"
shift

HOSTS_BEGIN="# BEGIN k8s-vnf cluster nodes"
HOSTS_END="# END k8s-vnf cluster nodes"
MODULES_FILE=/etc/modules-load.d/k8s-vnf.conf
SYSCTL_FILE=/etc/sysctl.d/99-k8s-vnf.conf
APT_PROXY_FILE=/etc/apt/apt.conf.d/95k8s-vnf-proxy
KEYRING=/etc/apt/keyrings/kubernetes-apt-keyring.gpg
SOURCES=/etc/apt/sources.list.d/kubernetes.list
HOSTS_DIR=/etc/containerd/certs.d

set_hostname() {
    local name="$1"
    [[ "$(hostname)" == "$name" ]] && return
    if [[ -d /run/systemd/system ]]; then hostnamectl set-hostname "$name"; else hostname "$name"; fi
    echo "$name" | install_file /etc/hostname 0644 >/dev/null
    echo "hostname set to $name"
}

# Our entries live in one marked block, rewritten whole (write_block, lib.sh).
write_hosts() {
    write_block /etc/hosts "$HOSTS_BEGIN" "$HOSTS_END" "$1"
}

disable_swap() {
    if [[ -n "$(swapon --show --noheadings 2>/dev/null)" ]]; then swapoff -a; echo "swap turned off"; fi
    if [[ -f /etc/fstab ]]; then
        awk '$1 !~ /^#/ && $3 == "swap" { $0 = "#" $0 } { print }' /etc/fstab | install_file /etc/fstab 0644 | sed 's/^/\/etc\/fstab /'
    fi
}

kernel_settings() {
    printf 'overlay\nbr_netfilter\n' | install_file "$MODULES_FILE" 0644 >/dev/null
    modprobe overlay
    modprobe br_netfilter
    printf 'net.bridge.bridge-nf-call-iptables = 1\nnet.bridge.bridge-nf-call-ip6tables = 1\nnet.ipv4.ip_forward = 1\n' |
        install_file "$SYSCTL_FILE" 0644 >/dev/null
    sysctl -p "$SYSCTL_FILE" >/dev/null
}

# systemd expands % in unit files: a URL-encoded proxy password (%40) must be written %%40.
unit_escape() { printf '%s' "${1//%/%%}"; }

proxy_settings() {
    local http="$1" https="$2" no_proxy="$3" changed=no unit
    if [[ -n "$http$https" ]]; then
        {
            [[ -z "$http" ]] || printf 'Acquire::http::Proxy "%s";\n' "$http"
            [[ -z "$https" ]] || printf 'Acquire::https::Proxy "%s";\n' "$https"
        } | install_file "$APT_PROXY_FILE" 0644 >/dev/null
        for unit in containerd kubelet; do
            {
                echo "[Service]"
                [[ -z "$http" ]] || printf 'Environment="HTTP_PROXY=%s"\n' "$(unit_escape "$http")"
                [[ -z "$https" ]] || printf 'Environment="HTTPS_PROXY=%s"\n' "$(unit_escape "$https")"
                printf 'Environment="NO_PROXY=%s"\n' "$(unit_escape "$no_proxy")"
            } | install_file "/etc/systemd/system/$unit.service.d/http-proxy.conf" 0644 | grep -qx changed && changed=yes
        done
    else
        remove_file "$APT_PROXY_FILE" >/dev/null
        for unit in containerd kubelet; do
            remove_file "/etc/systemd/system/$unit.service.d/http-proxy.conf" | grep -qx changed && changed=yes
        done
    fi
    if [[ "$changed" == yes ]]; then
        echo "proxy settings of containerd and kubelet changed"
        if [[ -d /run/systemd/system ]]; then systemctl daemon-reload; fi
        PROXY_CHANGED=yes
    fi
}

installed_version() { if command -v "$1" >/dev/null; then "$@" 2>/dev/null || true; fi; }

kubernetes_versions() {
    echo "kubeadm=$(installed_version kubeadm version -o short)"
    echo "kubelet=$(installed_version kubelet --version | awk '{print $2}')"
    echo "kubectl=$(installed_version kubectl version --client -o yaml | awk '$1 == "gitVersion:" {print $2}')"
}

# What kubeadm's preflight requires on the host that the Kubernetes packages do not pull in (v1.31
# cmd/kubeadm/app/preflight/checks_linux.go: conntrack, ip, iptables, mount and nsenter are mandatory; the
# kubelet package of pkgs.k8s.io depends on none of them since v1.28), and containerd: each command and the
# Debian/Ubuntu package that has it.
HOST_PACKAGES="containerd:containerd conntrack:conntrack ip:iproute2 iptables:iptables mount:mount nsenter:util-linux"

install_packages() {
    local version="$1" repository="$2" minor entry missing=()
    minor="$(echo "$version" | cut -d. -f1-2)"
    for entry in $HOST_PACKAGES; do
        command -v "${entry%%:*}" >/dev/null || missing+=("${entry#*:}")
    done
    if ((${#missing[@]})); then
        apt-get update -q
        apt_install "${missing[@]}"
    fi
    if [[ "$(kubernetes_versions | sort -u | cut -d= -f2 | sort -u)" == "v$version" ]]; then return; fi
    echo "installing kubelet, kubeadm and kubectl $version from $repository"
    if ! command -v curl >/dev/null || ! command -v gpg >/dev/null; then
        apt-get update -q
        apt_install curl gpg ca-certificates
    fi
    mkdir -p "$(dirname "$KEYRING")"
    curl -fsSL "$repository/v$minor/deb/Release.key" | gpg --dearmor --yes -o "$KEYRING"
    echo "deb [signed-by=$KEYRING] $repository/v$minor/deb/ /" | install_file "$SOURCES" 0644 >/dev/null
    # That repository's index only: the image's own sources may be out of reach (an air-gapped site), and each
    # would hold the update up until its resolver gives up, a minute and more. The other lists stay as they are.
    apt-get update -q -o Dir::Etc::sourcelist="$SOURCES" -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0
    apt-mark unhold kubelet kubeadm kubectl >/dev/null 2>&1 || true
    apt_install --allow-downgrades "kubelet=$version-*" "kubeadm=$version-*" "kubectl=$version-*"
    apt-mark hold kubelet kubeadm kubectl >/dev/null
}

# containerd looks up each registry in HOSTS_DIR/<host:port>/hosts.toml (containerd docs/hosts.md) once the
# CRI registry's config_path names it: [plugins."io.containerd.grpc.v1.cri".registry] in config version 2
# (containerd 1.x), [plugins.'io.containerd.cri.v1.images'.registry] in version 3 (2.x), whose transfer
# service, pulling for CRI from 2.1, takes the same path (docs/cri/config.md). The default is empty before 2.2
# and "/etc/containerd/certs.d:/etc/docker/certs.d" from 2.2 (internal/cri/config/config_unix.go). The
# transfer plugin's own config_path (plugins/transfer/plugin.go), where the config lists it, is set alike.
# Filters a configuration on stdin; exits 3 when it has no registry config_path to set.
set_registry_hosts_dir() {
    awk -v dir="$HOSTS_DIR" '
        /^[[:space:]]*\[/ { section = $0; sub(/[[:space:]]+$/, "", section) }
        /^[[:space:]]*config_path[[:space:]]*=/ && section ~ /(cri.*\.registry|io\.containerd\.transfer\.v1\.local["\047])\]$/ {
            sub(/=.*/, "= \"" dir "\"")
            if (section ~ /registry\]$/) found = 1
        }
        { print }
        END { if (!found) exit 3 }'
}

# The pause image kubeadm runs the cluster with, for VERSION and IMAGE_REPOSITORY (kubeadm's default when
# empty): what `kubeadm config images list` prints, which goes nowhere online when given the version. kubeadm's
# preflight warns when the runtime's sandbox image is another (cmd/kubeadm/app/preflight/checks.go,
# ImagePullCheck), and an air-gapped node finds no other in its image repository.
kubeadm_pause_image() {
    local version="$1" image_repository="$2"
    local flags=(--kubernetes-version "v$version")
    [[ -z "$image_repository" ]] || flags+=(--image-repository "$image_repository")
    kubeadm config images list "${flags[@]}" | awk '$1 ~ /\/pause:/ { print $1; exit }'
}

# containerd's sandbox image: sandbox_image of the CRI plugin in configuration version 2 (containerd 1.x),
# sandbox of the CRI images plugin's pinned_images in version 3 (2.x) (docs/cri/config.md). Filters a
# configuration on stdin; exits 3 when it has neither.
set_sandbox_image() {
    awk -v image="$1" '
        /^[[:space:]]*\[/ { section = $0; sub(/[[:space:]]+$/, "", section) }
        /^[[:space:]]*sandbox_image[[:space:]]*=/ && section ~ /io\.containerd\.grpc\.v1\.cri["\047]\]$/ { sub(/=.*/, "= \"" image "\""); found = 1 }
        /^[[:space:]]*sandbox[[:space:]]*=/ && section ~ /io\.containerd\.cri\.v1\.images["\047]\.pinned_images\]$/ { sub(/=.*/, "= \047" image "\047"); found = 1 }
        { print }
        END { if (!found) exit 3 }'
}

configure_containerd() {
    local version="$1" image_repository="$2" config pause
    config="$(containerd config default | sed 's/SystemdCgroup = false/SystemdCgroup = true/')"
    grep -q 'SystemdCgroup = true' <<<"$config" || die "containerd's default configuration has no SystemdCgroup setting"
    config="$(set_registry_hosts_dir <<<"$config")" || die "containerd's default configuration has no CRI registry config_path"
    pause="$(kubeadm_pause_image "$version" "$image_repository")" || die "kubeadm config images list failed for $version"
    [[ -n "$pause" ]] || die "kubeadm $version lists no pause image"
    config="$(set_sandbox_image "$pause" <<<"$config")" || die "containerd's default configuration has no sandbox image setting"
    if [[ -f "$CONTAINERD_CONFIG" ]]; then
        config="$(replace_block <(printf '%s\n' "$config") "$LOGINS_BEGIN" "$LOGINS_END" "$(block_lines "$CONTAINERD_CONFIG" "$LOGINS_BEGIN" "$LOGINS_END")")"
    fi
    # 0600: the registry connections add logins to it.
    if [[ "$(printf '%s\n' "$config" | install_file "$CONTAINERD_CONFIG" 0600)" == changed || "${PROXY_CHANGED:-}" == yes ]]; then
        containerd --config "$CONTAINERD_CONFIG" config dump >/dev/null
        svc restart containerd
        echo "containerd configured with the systemd cgroup driver, the sandbox image $pause and registry hosts in $HOSTS_DIR"
    fi
    if [[ "${PROXY_CHANGED:-}" == yes ]]; then svc restart kubelet; fi
    if [[ -d /run/systemd/system ]]; then systemctl enable --now kubelet >/dev/null 2>&1 || systemctl enable kubelet; fi
}

report() {
    echo "hostname=$(hostname)"
    kubernetes_versions
    printf 'hosts='
    block_lines /etc/hosts "$HOSTS_BEGIN" "$HOSTS_END" | paste -sd'|' -
    printf 'systemdCgroup=%s\n' "$(grep -c 'SystemdCgroup = true' /etc/containerd/config.toml 2>/dev/null || echo 0)"
}

case "$action" in
apply)
    name="$1" version="$2" repository="$3" image_repository="$4"
    # curl (the repository key) honours these; apt gets its own settings file.
    export http_proxy="${http_proxy:-}" https_proxy="${https_proxy:-}" no_proxy="${no_proxy:-}"
    shift 4
    entries=""
    while (($# >= 2)); do entries+="$1 $2"$'\n'; shift 2; done
    set_hostname "$name"
    write_hosts "${entries%$'\n'}"
    disable_swap
    kernel_settings
    proxy_settings "$http_proxy" "$https_proxy" "$no_proxy"
    install_packages "$version" "$repository"
    configure_containerd "$version" "$image_repository"
    echo "node $name prepared"
    ;;
report) report ;;
# What configure_containerd does to a containerd configuration, on stdin (for tests).
registry-hosts-dir) set_registry_hosts_dir ;;
sandbox-image) set_sandbox_image "$1" ;;
*) echo "nodePrep.sh: unknown action $action" >&2; exit 2 ;;
esac
