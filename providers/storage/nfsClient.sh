#!/usr/bin/env bash
# The NFS client on a Kubernetes node (sent after lib.sh): nfs-common, which kubelet's NFS volume plugin
# mounts with (mount.nfs). apt takes its proxy from the node's own settings (nodePrep.sh).
#
#   nfsClient.sh apply     install nfs-common when mount.nfs is missing, then report
#   nfsClient.sh report    print client=<mount.nfs version> or client= when missing
action="${1:-}"

client_version() {
    # "mount.nfs: (linux nfs-utils 2.6.2)"
    if command -v mount.nfs >/dev/null; then mount.nfs -V 2>&1 | sed -n 's/.*nfs-utils \([^)]*\)).*/\1/p' | head -1; fi
}

case "$action" in
apply)
    if [[ -z "$(client_version)" ]]; then
        apt-get update -q
        apt_install nfs-common
        echo "nfs-common installed"
    fi
    version="$(client_version)"
    [[ -n "$version" ]] || { echo "mount.nfs is still missing after installing nfs-common" >&2; exit 1; }
    echo "client=$version"
    ;;
report) echo "client=$(client_version)" ;;
*) echo "nfsClient.sh: unknown action $action" >&2; exit 2 ;;
esac
