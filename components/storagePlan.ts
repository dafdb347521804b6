/**
 * What the storage server serves and the cluster registers, computed from the resolved spec: the exports
 * file, each export's pinned fsid, the Cinder volumes' device serials, and the PersistentVolume objects with
 * the storage server's address in place of the manifest's. Pure functions.
 */
import { createHash } from "node:crypto";
import { NfsExportSpec, ServerSpec } from "../config/spec";

/**
 * A fixed `fsid=` for an export, from its path: the same after the VM is replaced, so file handles the
 * clients hold stay valid across a heal (exports(5): an explicit fsid keeps handles the same on another
 * server). Never 0, which marks the NFSv4 pseudo-root.
 */
export function exportFsid(dir: string): number {
    const n = createHash("sha256").update(dir).digest().readUInt32BE(0) & 0x7fffffff;
    return n === 0 ? 1 : n;
}

const SQUASH_OPTION: Record<NfsExportSpec["squash"], string> = { root: "root_squash", all: "all_squash", none: "no_root_squash" };

/** One exports(5) line: every option spelt out (sync and no_subtree_check are defaults, named to be plain). */
export function exportLine(e: NfsExportSpec): string {
    const options = ["rw", "sync", "no_subtree_check", SQUASH_OPTION[e.squash], ...(e.insecure ? ["insecure"] : []), "sec=sys", `fsid=${exportFsid(e.dir)}`];
    return `${e.dir} ${e.exportTo}(${options.join(",")})`;
}

/** The whole exports file; refuses two exports whose fsids collide (two paths, one 31-bit hash). */
export function exportsFile(exports: NfsExportSpec[]): string {
    const byFsid = new Map<number, string>();
    for (const e of exports) {
        const fsid = exportFsid(e.dir);
        const other = byFsid.get(fsid);
        if (other !== undefined && other !== e.dir) throw new Error(`exports ${other} and ${e.dir} hash to the same fsid ${fsid}; rename one of the directories`);
        byFsid.set(fsid, e.dir);
    }
    return `# Written by k8s-vnf; replaced whole on every change.\n${exports.map(exportLine).join("\n")}\n`;
}

/**
 * The serial a virtio disk shows for a Cinder volume: its id cut to 20 characters, under
 * /dev/disk/by-id/virtio-<serial> (Nova's device name is only a hint; kubernetes/kubernetes#33128).
 */
export function volumeSerial(volumeId: string): string {
    return volumeId.slice(0, 20);
}

/**
 * The PersistentVolume to register: the manifest's metadata and spec, with `spec.nfs.server` set to the
 * storage server's address (Tacker's driver did this with sed on any IPv4 address after `server:`).
 * A `status` in the manifest is the cluster's to set, and dropped.
 */
export function persistentVolumeFor(manifest: Record<string, unknown>, serverAddress: string): { metadata: Record<string, unknown>; spec: Record<string, unknown> } {
    const spec = structuredClone((manifest.spec ?? {}) as Record<string, unknown>);
    const nfs = (spec.nfs ?? {}) as Record<string, unknown>;
    spec.nfs = { ...nfs, server: serverAddress };
    return { metadata: structuredClone((manifest.metadata ?? {}) as Record<string, unknown>), spec };
}

/**
 * A digest of what replaces a VM when it changes (the compute instance's and port's ForceNew inputs: image,
 * zone, network, fixed IP; the login, which is in its user data), so the storage heal gate notices any
 * replacement of the storage server, not only a heal. Secret: the password is part of it.
 */
export function serverIdentity(server: ServerSpec): string {
    const { image, availabilityZone, networkId, subnetId, fixedIp, username, password, enablePasswordLogin } = server;
    return createHash("sha256").update(JSON.stringify({ image, availabilityZone, networkId, subnetId, fixedIp, username, password, enablePasswordLogin })).digest("hex");
}
