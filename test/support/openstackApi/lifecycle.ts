/**
 * What Nova's conductor, scheduler and compute service do to a server, done on the lab: placement on one of N
 * compute hosts (server group policies, nova/scheduler/filters/affinity_filter.py), the build (a lab host at its
 * first port's address, its further ports further addresses on eth0, its user data applied as cloud-init
 * would), stop and start (nova/compute/manager.py stop_instance / start_instance: vm_state stopped, power
 * state SHUTDOWN; the lab host's kubelet stopped, then its sshd or systemd and everything it runs; a start boots
 * it again), and delete (the host
 * stopped, the volumes detached, the ports unbound, the group membership gone). Statuses are the api-ref's
 * (https://docs.openstack.org/api-ref/compute/#servers-servers: BUILD, ACTIVE, SHUTOFF, ERROR, DELETED).
 */
import { createHash } from "node:crypto";
import { applyCloudConfig } from "./cloudInit";
import { CloudState, isoNow, Server } from "./state";

/** Nova's message when the scheduler finds no host (nova/exception.py NoValidHost, with the conductor's reason). */
export const NO_VALID_HOST = "No valid host was found. There are not enough hosts available.";

/** How long a deleted server still shows as DELETED before it is gone (404). */
const DELETED_SHOWN_MS = 2_000;

export class Lifecycle {
    constructor(private readonly state: CloudState) {}

    /**
     * The compute host for a new server, or undefined when none fits (nova/scheduler/filters/affinity_filter.py:
     * ServerGroupAntiAffinityFilter keeps hosts without a member, up to max_server_per_host with rules (2.64);
     * ServerGroupAffinityFilter keeps the members' host; the soft policies only weigh). The least busy host wins.
     */
    place(server: Server, only?: readonly string[]): string | undefined {
        const group = server.group ? this.state.serverGroups.get(server.group) : undefined;
        const live = [...this.state.servers.values()].filter((s) => s.id !== server.id && s.computeHost && s.status !== "DELETED");
        const load = (host: string) => live.filter((s) => s.computeHost === host).length;
        const membersOn = (host: string) => live.filter((s) => s.computeHost === host && group?.members.includes(s.id)).length;
        let candidates = [...(only ?? this.state.computeHosts)];
        if (group?.policy === "anti-affinity") candidates = candidates.filter((h) => membersOn(h) < (group.rules.max_server_per_host ?? 1));
        if (group?.policy === "affinity") {
            const used = candidates.filter((h) => membersOn(h) > 0);
            if (used.length) candidates = used;
        }
        const weight = (h: string) => (group?.policy === "soft-anti-affinity" ? membersOn(h) * 1000 : group?.policy === "soft-affinity" ? -membersOn(h) * 1000 : 0) + load(h);
        return candidates.sort((a, b) => weight(a) - weight(b))[0];
    }

    /** Builds a placed server in the background: BUILD until its lab host answers, then ACTIVE (or ERROR with a fault). */
    build(server: Server): void {
        this.run(server, async () => {
            if (!server.computeHost) return this.fail(server, 500, NO_VALID_HOST);
            const ports = server.ports.map((id) => this.state.ports.get(id)!);
            const [first, ...more] = ports;
            if (!first?.indexes.length) return this.fail(server, 500, `Build of instance ${server.id} aborted: the lab starts a server on a port with a fixed IP of the lab's subnet.`);
            const name = server.name;
            if (!/^[A-Za-z0-9][A-Za-z0-9-]{0,62}$/.test(name) || this.state.lab.hostNames().includes(name)) {
                return this.fail(server, 500, `Build of instance ${server.id} aborted: the lab names a host after its server, and ${JSON.stringify(name)} is not a free host name.`);
            }
            try {
                server.hostName = name;
                await this.state.lab.startAt(name, first.indexes[0], this.state.cluster);
                const extra = [...first.indexes.slice(1), ...more.flatMap((p) => p.indexes)];
                for (const index of extra) await this.state.lab.inside(name, `ip addr add ${this.state.lab.addressOf(index)}/24 dev eth0`);
                // Empty user data is none to cloud-init; the provider sends "" when the program gives none
                // (gophercloud servers.CreateOpts.ToServerCreateMap encodes a non-nil empty UserData).
                if (server.userData) await applyCloudConfig(this.state.lab, name, server.userData);
            } catch (e) {
                return this.fail(server, 500, `Build of instance ${server.id} aborted: ${(e as Error).message}`);
            }
            if (server.status !== "BUILD") return;
            for (const p of ports) p.status = "ACTIVE";
            server.status = "ACTIVE";
            server.task_state = null;
            server.launchedAt = isoNow();
            server.updated = isoNow();
        });
    }

    /** os-stop and os-start (nova/compute/manager.py stop_instance, start_instance); the status changes when done. */
    power(server: Server, to: "SHUTOFF" | "ACTIVE"): void {
        server.task_state = to === "SHUTOFF" ? "powering-off" : "powering-on";
        this.run(server, async () => {
            const name = server.hostName!;
            // A host that boots systemd stops its kubelet as a unit and boots it again with its other units.
            const systemd = this.state.lab.bootsSystemd;
            if (to === "SHUTOFF") {
                await this.state.lab.inside(name, systemd ? "systemctl stop kubelet" : "/etc/init.d/kubelet stop");
                await this.state.lab.killSshd(name);
            } else {
                await this.state.lab.startSshd(name);
                if (!systemd) await this.state.lab.inside(name, "/etc/init.d/kubelet start");
            }
            server.status = to;
            server.task_state = null;
            server.updated = isoNow();
        });
    }

    /**
     * os-migrateLive to `host` (the scheduler's choice among the others when null), as nova/conductor/tasks/
     * live_migrate.py checks it: not its own host (UnableToMigrateToSelf), and the scheduler's filters, server
     * group policies included, for the target. Returns the reason it cannot go, or undefined once it is moving:
     * MIGRATING with task_state migrating, then ACTIVE on the target. The lab host itself stays as it is (its
     * processes, disks and address move with it on a real cloud).
     */
    migrateLive(server: Server, host: string | null): string | undefined {
        const from = server.computeHost;
        if (host !== null && host === from) return `Unable to migrate instance (${server.id}) to current host (${host}).`;
        const target = this.place(server, host !== null ? [host] : this.state.computeHosts.filter((h) => h !== from));
        if (!target) return NO_VALID_HOST;
        server.status = "MIGRATING";
        server.task_state = "migrating";
        this.run(server, async () => {
            server.computeHost = target;
            server.status = "ACTIVE";
            server.task_state = null;
            server.updated = isoNow();
        });
        return undefined;
    }

    /** DELETE /servers/{id}: the host stops, then DELETED for a moment, then gone. */
    destroy(server: Server): void {
        server.task_state = "deleting";
        this.run(server, async () => {
            if (server.hostName && this.state.lab.hostNames().includes(server.hostName)) await this.state.lab.stopHost(server.hostName);
            for (const attached of server.volumes) {
                const v = this.state.volumes.get(attached.volumeId);
                if (v) {
                    v.attachment = undefined;
                    v.status = "available";
                }
            }
            server.volumes = [];
            this.release(server);
            server.status = "DELETED";
            server.task_state = null;
            server.updated = isoNow();
            setTimeout(() => this.state.servers.delete(server.id), DELETED_SHOWN_MS).unref();
        });
    }

    /** The ports go back to unbound (the ones Nova made are deleted), the group forgets the server. */
    release(server: Server): void {
        for (const id of server.ports) {
            const p = this.state.ports.get(id);
            if (!p) continue;
            if (server.ownPorts.includes(id)) {
                for (const index of p.indexes) this.state.lab.releaseIndex(index);
                this.state.ports.delete(id);
                continue;
            }
            p.device_id = "";
            p.device_owner = "";
            p.status = "DOWN";
        }
        for (const index of this.state.orphanIndexes.get(server.id) ?? []) this.state.lab.releaseIndex(index);
        this.state.orphanIndexes.delete(server.id);
        const group = server.group ? this.state.serverGroups.get(server.group) : undefined;
        if (group) group.members = group.members.filter((m) => m !== server.id);
    }

    /** ERROR with a fault (nova/compute/utils.py add_instance_fault_from_exc); the server's ports are unbound. */
    private fail(server: Server, code: number, message: string): void {
        server.status = "ERROR";
        server.task_state = null;
        server.fault = { code, message, created: isoNow() };
        // Always shown: the provider reports only "unexpected state 'ERROR'", so this line is what says why.
        process.stderr.write(`lab OpenStack API: server ${server.name} ERROR: ${message}\n`);
        server.updated = isoNow();
        for (const id of server.ports) {
            const p = this.state.ports.get(id);
            if (p && !server.ownPorts.includes(id)) {
                p.device_id = "";
                p.device_owner = "";
                p.status = "DOWN";
            }
        }
    }

    /** One action at a time per server, each after the previous one. */
    private run(server: Server, work: () => Promise<void>): void {
        const next = server.busy.then(work).catch((e: Error) => {
            if (server.status !== "DELETED") this.fail(server, 500, e.message);
        });
        server.busy = next;
        this.state.track(next);
    }
}

/** Nova's hostId: an opaque hash of the project and the compute host (nova/api/openstack/compute/views/servers.py). */
export function hostId(projectId: string, host: string | null): string {
    return host ? createHash("sha224").update(projectId + host).digest("hex") : "";
}
