#!/usr/bin/env bash
# Cinder volumes on a VM (sent after lib.sh, before the script that uses them): each found by its virtio
# serial, formatted ext4 only when it holds no filesystem, mounted by UUID through one marked /etc/fstab block.
# The using script reads its volume arguments with read_volumes, then calls mount_volumes.

FSTAB_BEGIN="# BEGIN k8s-vnf volumes"
FSTAB_END="# END k8s-vnf volumes"
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

# Our fstab entries live in one marked block, rewritten whole (write_block, lib.sh; libmount skips comments).
write_fstab() {
    write_block /etc/fstab "$FSTAB_BEGIN" "$FSTAB_END" "$1"
}

# The mount points of our fstab block (read before it is rewritten).
fstab_mounts() {
    block_lines /etc/fstab "$FSTAB_BEGIN" "$FSTAB_END" | awk '{ print $2 }'
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

# One `volume=SERIAL MOUNT mounted|unmounted|missing` line per volume: what a refresh compares.
report_volumes() {
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
}

# Flushes and unmounts every volume (before its VM goes: the data is on disk when the volume detaches).
unmount_volumes() {
    local entry serial mount
    sync
    for entry in "${VOLUMES[@]}"; do
        read -r serial mount <<<"$entry"
        if mountpoint -q "$mount"; then
            umount "$mount" || echo "could not unmount $mount; the volume is detached with its VM" >&2
        fi
        : "$serial"
    done
}
