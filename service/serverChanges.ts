/**
 * Which VNFCs an operation changed: the engine's events name each OpenStack server (`Instance`) a step
 * touched, with its id before (`metadata.old`) and after (`metadata.new`); the program's own `vnfcResources`
 * output, and the instance's VNFCs before the operation, say which VNFC each server id is. A server that is
 * no VNFC (an Ansible server) is not reported.
 */
type Body = Record<string, any>;

const INSTANCE = "openstack:compute/instance:Instance";

/** SOL003 AffectedVnfc.changeType of a server's steps. */
function changeType(ops: Set<string>): string {
    const created = ops.has("create");
    const deleted = ops.has("delete");
    if (created && !deleted && ops.size === 1) return "ADDED";
    if (deleted && !created && ops.size === 1) return "REMOVED";
    return "MODIFIED";
}

export class ServerChanges {
    /** URN → the ops of its steps and every id it had. */
    private readonly servers = new Map<string, { ops: Set<string>; ids: Set<string> }>();

    /** Notes an engine event (`resourcePreEvent` / `resOutputsEvent` of a server whose step changes it). */
    see(event: Body): void {
        const metadata = (event.resourcePreEvent ?? event.resOutputsEvent)?.metadata;
        if (!metadata || metadata.type !== INSTANCE || metadata.op === "same" || metadata.op === "read" || metadata.op === "refresh") return;
        const entry = this.servers.get(metadata.urn) ?? { ops: new Set<string>(), ids: new Set<string>() };
        entry.ops.add(String(metadata.op));
        for (const state of [metadata.old, metadata.new]) if (state?.id) entry.ids.add(String(state.id));
        this.servers.set(metadata.urn, entry);
    }

    /** Servers changing so far. */
    get count(): number {
        return this.servers.size;
    }

    /**
     * The VNFCs of the changed servers. `before`: the instance's vnfcResourceInfo before the operation;
     * `after`: the program's `vnfcResources` output after it.
     */
    affectedVnfcs(before: Body[], after: Body[]): Body[] {
        const byServer = new Map<string, { id: string; vduId: string }>();
        for (const v of before) byServer.set(String(v.computeResource?.resourceId), { id: v.id, vduId: v.vduId });
        for (const v of after) byServer.set(String(v.serverId), { id: v.id, vduId: v.vduId });
        const affected = new Map<string, Body>();
        for (const { ops, ids } of this.servers.values()) {
            const newest = [...ids].reverse().find((id) => byServer.has(id));
            if (!newest) continue;
            const vnfc = byServer.get(newest)!;
            affected.set(vnfc.id, { id: vnfc.id, vduId: vnfc.vduId, changeType: changeType(ops), computeResource: { resourceId: newest, vimLevelResourceType: "OS::Nova::Server" } });
        }
        return [...affected.values()];
    }
}
