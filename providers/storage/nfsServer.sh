#!/usr/bin/env bash
# The NFS storage server (sent after lib.sh and volumes.sh): each Cinder volume found by its virtio serial, formatted ext4
# only when it holds no filesystem, mounted by UUID through /etc/fstab; nfs-kernel-server serving NFSv4
# only; one exports file under /etc/exports.d, written whole, then `exportfs -ra`. Safe to run again.
#
#   nfsServer.sh apply EXPORTS_TEXT VOLUME_COUNT [SERIAL MOUNT]... [EXPORT_DIR]...
#   nfsServer.sh report VOLUME_COUNT [SERIAL MOUNT]...   what a refresh compares
#   nfsServer.sh stop VOLUME_COUNT [SERIAL MOUNT]...     stop serving, flush and unmount the volumes
#
# http_proxy / https_proxy may be exported ahead of the script for apt (never on a command line).
action="$1"
shift

EXPORTS_FILE=/etc/exports.d/k8s-vnf.exports
NFS_CONF=/etc/nfs.conf.d/k8s-vnf.conf
# Whom root_squash and all_squash map to (exports(5) anonuid/anongid default: nobody/nogroup).
ANON_ID=65534

install_server() {
    if ! command -v exportfs >/dev/null; then
        apt-get update -q
        apt_install nfs-kernel-server
    fi
    # NFSv4 only (nfs.conf(5), [nfsd] vers3); NFSv2 is gone from nfs-utils 2.6.
    if [[ "$(printf '[nfsd]\nvers3=n\n' | install_file "$NFS_CONF" 0644)" == changed ]]; then
        echo "nfsd limited to NFSv4"
        NFS_CONF_CHANGED=yes
    fi
}

# After the exports are written: Debian's init script does not start a server that has none.
start_server() {
    if svc status nfs-kernel-server >/dev/null 2>&1; then
        if [[ "${NFS_CONF_CHANGED:-}" == yes ]]; then svc restart nfs-kernel-server; fi
    else
        svc start nfs-kernel-server
        echo "nfs-kernel-server started"
    fi
}

make_export_dirs() {
    local dir
    for dir in "$@"; do
        [[ -d "$dir" ]] && continue
        install -d -o "$ANON_ID" -g "$ANON_ID" -m 0775 "$dir"
        echo "created $dir (owned by the anonymous ids root_squash and all_squash map to)"
    done
}

# served: the directories the server exports now (exportfs -s prints the kernel's export table).
served() {
    if command -v exportfs >/dev/null; then exportfs -s | awk 'NF { print $1 }' | sort -u; fi
}

write_exports() {
    mkdir -p "$(dirname "$EXPORTS_FILE")"
    printf '%s' "$1" | install_file "$EXPORTS_FILE" 0644 | sed "s|^|$EXPORTS_FILE |"
}

export_all() {
    local dir
    exportfs -ra
    for dir in "$@"; do
        served | grep -qxF "$dir" || { echo "$dir is not exported after exportfs -ra; exportfs -s shows: $(served | paste -sd' ' -)" >&2; exit 1; }
    done
}

report() {
    report_volumes
    printf 'exportsFile='
    if [[ -f "$EXPORTS_FILE" ]]; then base64 -w0 "$EXPORTS_FILE"; fi
    echo
    printf 'served='
    served | paste -sd'|' -
    if svc status nfs-kernel-server >/dev/null 2>&1; then echo "server=running"; else echo "server=stopped"; fi
}

stop_serving() {
    if command -v exportfs >/dev/null; then exportfs -ua; fi
    if svc status nfs-kernel-server >/dev/null 2>&1; then svc stop nfs-kernel-server; fi
    unmount_volumes
    echo "NFS service stopped and volumes unmounted"
}

case "$action" in
apply)
    exports_text="$1"
    shift
    export http_proxy="${http_proxy:-}" https_proxy="${https_proxy:-}"
    read_volumes "$@"
    previous_mounts="$(fstab_mounts)"
    mount_volumes
    install_server
    make_export_dirs "${REST[@]}"
    write_exports "$exports_text"
    start_server
    export_all "${REST[@]}"
    unmount_unwanted "$previous_mounts" "$WANTED_MOUNTS"
    echo "storage server serving $(served | paste -sd' ' -)"
    ;;
report)
    read_volumes "$@"
    report
    ;;
stop)
    read_volumes "$@"
    stop_serving
    ;;
*) echo "nfsServer.sh: unknown action $action" >&2; exit 2 ;;
esac
