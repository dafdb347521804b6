/**
 * The program's side of volumes.sh, for the steps that mount Cinder volumes (the NFS server, the registry):
 * how the volumes are passed to the script, checked, and read back from its `volume=` report lines.
 */
import { parseReport } from "../kubernetes/scripts";

export interface StorageVolume {
    /** The volume's virtio serial: its Cinder id cut to 20 characters. */
    serial: string;
    mountTo: string;
}

const SERIAL_RE = /^[A-Za-z0-9-]{1,20}$/;
const MOUNT_RE = /^\/[A-Za-z0-9._/+@-]*$/;

/** `COUNT [SERIAL MOUNT]...`: how volumes.sh's read_volumes takes them. */
export function volumeArgs(volumes: StorageVolume[]): string[] {
    return [String(volumes.length), ...volumes.flatMap((v) => [v.serial, v.mountTo])];
}

/** Whether each volume has a virtio serial and an absolute mount point other than /. */
export function validVolumes(volumes: unknown): volumes is StorageVolume[] {
    return Array.isArray(volumes) && volumes.every((v) => SERIAL_RE.test(v?.serial ?? "") && MOUNT_RE.test(v?.mountTo ?? "") && v.mountTo !== "/");
}

/**
 * A report of a script that starts with report_volumes (volumes.sh): the volumes of `volumes` found mounted,
 * and the script's other `key=value` lines.
 */
export function readVolumeReport(stdout: string, volumes: StorageVolume[]): { mounted: StorageVolume[]; report: Record<string, string> } {
    const lines = stdout.split("\n");
    const fields = lines.filter((l) => l.startsWith("volume=")).map((l) => l.slice("volume=".length).split(" "));
    const mounted = new Set(fields.filter((f) => f[2] === "mounted").map((f) => f[0]));
    return { mounted: volumes.filter((v) => mounted.has(v.serial)), report: parseReport(lines.filter((l) => !l.startsWith("volume=")).join("\n")) };
}
