#!/usr/bin/env bash
# The NFS storage server (sent after lib.sh): each Cinder volume found by its virtio serial, formatted ext4
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
FSTAB_BEGIN="# BEGIN k8s-vnf volumes"
FSTAB_END="# END k8s-vnf volumes"
# Whom root_squash and all_squash map to (exports(5) anonuid/anongid default: nobody/nogroup).
ANON_ID=65534
DEVICE_WAIT_SECONDS=60

VOLUMES=()
read_volumes() {
    local count="$1"
    shift
    VOLUMES=()
    for ((i = 0; i < count; i++)); do VOLUMES+=("$1 $2"); shift 2; done
    REST=("$@")
}

device_of() { echo "/dev/disk/by-id/virtio-$1"; }

# Nova attaches before the VM sees the disk: wait for udev's link.
wait_for_device() {
    local serial="$1" dev i
    dev="$(device_of "$serial")"
    for ((i = 0; i < DEVICE_WAIT_SECONDS; i++)); do
        [[ -b "$dev" ]] && return 0
        sleep 1
    done
    echo "volume $serial is not attached: no $dev after ${DEVICE_WAIT_SECONDS}s" >&2
    exit 1
}

# fs_type DEVICE: the filesystem (or partition table) a low-level probe finds; "blank" only when blkid says it
# found nothing (exit 2). Any other failure (ambivalent signatures: 8, a usage or I/O error) stops the step:
# a volume blkid cannot read is never taken for a blank one (mkfs asks nothing without a terminal).
fs_type() {
    local found rc=0
    found="$(blkid -p -o export "$1")" || rc=$?
    case "$rc" in
    0) awk -F= '$1 == "TYPE" || $1 == "PTTYPE" { print $2; found = 1; exit } END { if (!found) print "unknown" }' <<<"$found" ;;
    2) echo blank ;;
    *) echo "blkid cannot tell what $1 holds (exit $rc): not formatted; look at it with blkid -p and wipefs -n" >&2; exit 1 ;;
    esac
}

# Formats only a blank volume: one that holds data is never formatted, whatever it holds.
format_once() {
    local serial="$1" dev type
    dev="$(device_of "$serial")"
    type="$(fs_type "$dev")"
    case "$type" in
    ext4) ;;
    blank)
        mkfs.ext4 -q -L "k8s-vnf" "$dev"
        echo "volume $serial was blank: formatted ext4"
        ;;
    *)
        echo "volume $serial holds $type, not ext4: it is not formatted over; attach an empty volume or one k8s-vnf formatted" >&2
        exit 1
        ;;
    esac
    if command -v udevadm >/dev/null; then udevadm settle; fi
}

uuid_of() { blkid -p -o value -s UUID "$(device_of "$1")"; }

# Our fstab entries live in one marked block, rewritten whole (replace_block, lib.sh; libmount skips comments).
write_fstab() {
    replace_block /etc/fstab "$FSTAB_BEGIN" "$FSTAB_END" "$1" | install_file /etc/fstab 0644 | sed 's/^/\/etc\/fstab /'
}

# The mount points of our fstab block (read before it is rewritten).
fstab_mounts() {
    awk -v b="$FSTAB_BEGIN" -v e="$FSTAB_END" '$0 == b { on = 1; next } $0 == e { on = 0 } on { print $2 }' /etc/fstab
}

# Mount points no longer wanted (a volume dropped or moved): unmounted once the new exports are served, since
# the server holds whatever it exported from them until exportfs -ra drops it.
unmount_unwanted() {
    local previous="$1" wanted="$2" mount
    while read -r mount; do
        [[ -n "$mount" ]] || continue
        grep -qxF "$mount" <<<"$wanted" && continue
        if mountpoint -q "$mount"; then
            sync
            umount "$mount"
            echo "unmounted $mount (its volume is no longer the storage server's)"
        fi
    done <<<"$previous"
}

mount_volumes() {
    local entries="" entry serial mount uuid current
    local -a found=()
    WANTED_MOUNTS=""
    for entry in "${VOLUMES[@]}"; do
        read -r serial mount <<<"$entry"
        wait_for_device "$serial"
        format_once "$serial"
        uuid="$(uuid_of "$serial")"
        found+=("$serial $mount $uuid")
        entries+="UUID=$uuid $mount ext4 defaults,nofail 0 2"$'\n'
        WANTED_MOUNTS+="$mount"$'\n'
    done
    write_fstab "${entries%$'\n'}"
    for entry in "${found[@]}"; do
        read -r serial mount uuid <<<"$entry"
        mkdir -p "$mount"
        if mountpoint -q "$mount"; then
            current="$(findmnt -rn -o UUID --mountpoint "$mount")"
            [[ "$current" == "$uuid" ]] || { echo "$mount is mounted from another filesystem ($current), not volume $serial ($uuid)" >&2; exit 1; }
        else
            # fstab says nofail (a missing volume must not stop the VM's boot), with which mount also
            # returns 0 when it finds nothing to mount: check.
            mount "$mount"
            mountpoint -q "$mount" || { echo "volume $serial (UUID $uuid) did not mount on $mount" >&2; exit 1; }
            echo "mounted volume $serial on $mount"
        fi
    done
}

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
    local entry serial mount state uuid
    for entry in "${VOLUMES[@]}"; do
        read -r serial mount <<<"$entry"
        state=missing
        if [[ -b "$(device_of "$serial")" ]]; then
            uuid="$(uuid_of "$serial" || true)"
            state=unmounted
            if mountpoint -q "$mount" && [[ -n "$uuid" && "$(findmnt -rn -o UUID --mountpoint "$mount")" == "$uuid" ]]; then state=mounted; fi
        fi
        echo "volume=$serial $mount $state"
    done
    printf 'exportsFile='
    if [[ -f "$EXPORTS_FILE" ]]; then base64 -w0 "$EXPORTS_FILE"; fi
    echo
    printf 'served='
    served | paste -sd'|' -
    if svc status nfs-kernel-server >/dev/null 2>&1; then echo "server=running"; else echo "server=stopped"; fi
}

stop_serving() {
    local entry serial mount
    if command -v exportfs >/dev/null; then exportfs -ua; fi
    if svc status nfs-kernel-server >/dev/null 2>&1; then svc stop nfs-kernel-server; fi
    sync
    for entry in "${VOLUMES[@]}"; do
        read -r serial mount <<<"$entry"
        if mountpoint -q "$mount"; then
            umount "$mount" || echo "could not unmount $mount; the volume is detached with its VM" >&2
        fi
        : "$serial"
    done
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
