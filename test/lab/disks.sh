# shellcheck shell=bash
# Sourced by lab.sh: the lab's block devices. Cinder volumes (loop devices over LABDIR/volumes/ID/volume.img,
# shown in a host as /dev/vdX) and the own disk of a host that boots as a VM (disk_create).

# loop_detach LOOP FILE: detaches LOOP only while it still serves FILE (never a device someone else got since).
loop_detach() {
    local loop="$1" file="$2" back
    back="$(losetup -n -O BACK-FILE "$loop" 2>/dev/null || true)"
    back="${back%"${back##*[![:space:]]}"}"
    if [[ -n "$back" && "$back" == "$(readlink -m "$file")"* ]]; then losetup -d "$loop" 2>/dev/null || true; fi
}

# dev_numbers DEVICE: "MAJOR MINOR" of a block device, in decimal.
dev_numbers() {
    local hex
    hex="$(stat -L -c '%t %T' "$1")"
    echo "$((16#${hex% *})) $((16#${hex#* }))"
}

# A host that boots as a VM has a disk of its own, as a VM has: a sparse ext4 image (DIR/disk.img, NODE_DISK_GB)
# holding its root's overlay upper and work directories and its /var/lib/containerd. The kubelet measures that
# filesystem for its eviction thresholds (nodefs, imagefs); on the machine's own disk it would see the machine's
# free space. Mounted at DIR/disk (loop, freed when unmounted) here while the host is set up, and in the host's
# own mount namespace while it runs (host-init.sh); DIR/upper, DIR/work and DIR/var-lib-containerd lead into it.
NODE_DISK_GB=20
disk_create() {
    local dir="$1" part
    truncate -s "${NODE_DISK_GB}G" "$dir/disk.img"
    mkfs.ext4 -q -F -E lazy_itable_init=1,lazy_journal_init=1 "$dir/disk.img"
    mkdir -p "$dir/disk"
    mount -o loop "$dir/disk.img" "$dir/disk"
    for part in upper work var-lib-containerd; do
        mkdir -p "$dir/disk/$part"
        ln -s "disk/$part" "$dir/$part"
    done
}

# Cinder volumes. One lock per lab serialises every volume's state and every host's device letters.
volume_dir() {
    [[ "$2" =~ ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$ ]] || die "invalid volume id: $2"
    echo "$1/volumes/$2"
}

volume_lock() {
    mkdir -p "$1/volumes"
    exec 9>>"$1/volumes/.lock"
    flock 9
}

# The host dir a volume is attached to, empty when it is available (a host that is gone holds nothing).
volume_host() {
    local voldir="$1" host
    host="$(cat "$voldir/attached" 2>/dev/null || true)"
    if [[ -n "$host" && -f "$host/volumes/${voldir##*/}" ]]; then echo "$host"; fi
}

volume_create() {
    local labdir="$1" id="$2" size_mb="$3" voldir
    voldir="$(volume_dir "$labdir" "$id")"
    [[ "$size_mb" =~ ^[1-9][0-9]*$ ]] || die "invalid volume size: $size_mb MB"
    volume_lock "$labdir"
    mkdir "$voldir" 2>/dev/null || die "volume $id already exists"
    truncate -s "${size_mb}M" "$voldir/volume.img"
    losetup -f --show "$voldir/volume.img" >"$voldir/loop.new"
    mv "$voldir/loop.new" "$voldir/loop"
}

volume_delete() {
    local labdir="$1" id="$2" voldir
    voldir="$(volume_dir "$labdir" "$id")"
    volume_lock "$labdir"
    [[ -d "$voldir" ]] || die "Volume $id could not be found."
    # Cinder's words (cinder/volume/api.py, API.delete).
    [[ -z "$(volume_host "$voldir")" ]] ||
        die "Invalid volume: Volume status must be available or error or error_restoring or error_extending or error_managing and must not be migrating, attached, belong to a group, have snapshots, awaiting a transfer, or be disassociated from snapshots after volume transfer."
    if [[ -f "$voldir/loop" ]]; then loop_detach "$(cat "$voldir/loop")" "$voldir/volume.img"; fi
    rm -rf "$voldir"
}

# udev's work for a disk that comes or goes, inside the host: its by-uuid/by-label links (the lab's
# udevadm stand-in, when the host has it).
host_udev() {
    in_host "$1" sh -c '[ ! -x /usr/local/sbin/udevadm ] || /usr/local/sbin/udevadm trigger --action=change --subsystem-match=block'
}

volume_attach() {
    local labdir="$1" id="$2" hostdir="$3" voldir device letter used serial record
    voldir="$(volume_dir "$labdir" "$id")"
    [[ -f "$hostdir/netns" ]] || die "no lab host in $hostdir"
    volume_lock "$labdir"
    [[ -f "$voldir/loop" ]] || die "Volume $id could not be found."
    if [[ -n "$(volume_host "$voldir")" ]]; then
        # Nova's words when the volume is in use (cinder reserve: volume status must be available).
        die "Invalid volume: Volume $id status must be available or downloading to reserve, but the current status is in-use."
    fi
    mkdir -p "$hostdir/volumes"
    # The next free letter after vda (the root disk), as libvirt names the next virtio disk.
    used=" "
    if [[ -f "$hostdir/loop" ]]; then used+="vdb "; fi
    for record in "$hostdir"/volumes/*; do
        if [[ -f "$record" ]]; then used+="$(head -1 "$record") "; fi
    done
    device=""
    for letter in {b..z}; do
        if [[ "$used" != *" vd$letter "* ]]; then device="vd$letter"; break; fi
    done
    [[ -n "$device" ]] || die "host has no free virtio disk name left"
    serial="virtio-${id:0:20}"
    printf '%s\n%s\n' "$device" "$voldir" >"$hostdir/volumes/$id"
    echo "$hostdir" >"$voldir/attached"
    if [[ -n "$(host_pid "$hostdir")" ]]; then
        # shellcheck disable=SC2046 # MAJOR MINOR as two words
        in_host "$hostdir" mknod -m 0660 "/dev/$device" b $(dev_numbers "$(cat "$voldir/loop")")
        in_host "$hostdir" mkdir -p /dev/disk/by-id
        in_host "$hostdir" ln -sfn "../../$device" "/dev/disk/by-id/$serial"
        host_udev "$hostdir"
    fi
    echo "/dev/$device"
}

volume_detach() {
    local labdir="$1" id="$2" hostdir="$3" voldir record device
    voldir="$(volume_dir "$labdir" "$id")"
    record="$hostdir/volumes/$id"
    volume_lock "$labdir"
    [[ -f "$record" ]] || die "Volume $id is not attached to $(basename "$hostdir")"
    device="$(head -1 "$record")"
    if [[ -n "$(host_pid "$hostdir")" ]]; then
        in_host "$hostdir" rm -f "/dev/disk/by-id/virtio-${id:0:20}" "/dev/$device"
        host_udev "$hostdir"
    fi
    rm -f "$record"
    if [[ "$(cat "$voldir/attached" 2>/dev/null)" == "$hostdir" ]]; then rm -f "$voldir/attached"; fi
}

# Every volume the lab recorded, by its recorded loop device (after the hosts are down).
volumes_down() {
    local labdir="$1" voldir
    [[ -d "$labdir/volumes" ]] || return 0
    for voldir in "$labdir"/volumes/*/; do
        voldir="${voldir%/}"
        [[ -d "$voldir" ]] || continue
        if [[ -f "$voldir/loop" ]]; then loop_detach "$(cat "$voldir/loop")" "$voldir/volume.img"; fi
        rm -rf "$voldir"
    done
}
