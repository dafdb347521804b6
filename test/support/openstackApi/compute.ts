/**
 * Nova v2.1 servers: create (flavor and image by id, NICs on ports or networks, user data, scheduler hint
 * `group`), show and list (with the admin-only OS-EXT-SRV-ATTR:host), update, delete, os-stop/os-start,
 * metadata and tags. What the provider calls: terraform-provider-openstack v1.54.1
 * resource_openstack_compute_instance_v2.go (create, wait BUILD → ACTIVE, power_state shutoff by os-stop
 * and wait for SHUTOFF, read: show twice, flavor, image, tags at 2.26; update: name, metadata, os-stop/os-start;
 * delete and wait for DELETED or 404) with gophercloud v1.8.0 openstack/compute/v2/servers; the shapes and
 * errors from the api-ref (https://docs.openstack.org/api-ref/compute/#servers-servers) and
 * nova/api/openstack/compute/servers.py.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { hostId, Lifecycle } from "./lifecycle";
import { ApiRequest, CloudState, filterBy, isoNow, novaError, Route, Server } from "./state";
import { allocateIndexIn, fixedIpsOf, indexOfAddress } from "./tenantNetworks";

export function computeRoutes(state: CloudState, life: Lifecycle, base: () => string): Route[] {
    const project = () => state.identity.project.id;
    const link = (kind: string, id: string) => [
        { rel: "self", href: `${base()}/compute/v2.1/${project()}/${kind}/${id}` },
        { rel: "bookmark", href: `${base()}/compute/${project()}/${kind}/${id}` },
    ];
    const server = (id: string): Server => {
        const s = state.servers.get(id);
        if (!s) throw novaError(404, `Instance ${id} could not be found.`);
        return s;
    };
    const vmState = (s: Server) => ({ BUILD: "building", ACTIVE: "active", SHUTOFF: "stopped", ERROR: "error", DELETED: "deleted", MIGRATING: "active" })[s.status];

    /** GET /servers/{id} (api-ref compute "Show Server Details"), the fields of the request's microversion. */
    const view = (s: Server, req: ApiRequest): Record<string, unknown> => {
        const mv = req.microversion;
        const flavor = state.flavors.find((f) => f.id === s.flavorId);
        const addresses: Record<string, unknown[]> = {};
        if (s.status !== "ERROR") {
            for (const id of s.ports) {
                const p = state.ports.get(id);
                if (!p) continue;
                const name = state.tenantNetwork(p.network_id)?.name ?? state.publicNetwork.name;
                for (const ip of p.fixed_ips) (addresses[name] ??= []).push({ version: 4, addr: ip.ip_address, "OS-EXT-IPS:type": "fixed", "OS-EXT-IPS-MAC:mac_addr": p.mac_address });
            }
        }
        const body: Record<string, unknown> = {
            id: s.id,
            name: s.name,
            status: s.status,
            tenant_id: project(),
            user_id: state.identity.user.id,
            metadata: s.metadata,
            hostId: hostId(project(), s.computeHost),
            image: { id: s.imageId, links: link("images", s.imageId) },
            flavor: mv.atLeast("2.47") && flavor
                ? { vcpus: flavor.vcpus, ram: flavor.ram, disk: flavor.disk, ephemeral: 0, swap: 0, original_name: flavor.name, extra_specs: {} }
                : { id: s.flavorId, links: link("flavors", s.flavorId) },
            created: s.created,
            updated: s.updated,
            addresses,
            accessIPv4: "",
            accessIPv6: "",
            links: link("servers", s.id),
            "OS-DCF:diskConfig": "MANUAL",
            progress: 0,
            "OS-EXT-AZ:availability_zone": s.availabilityZone,
            config_drive: "",
            key_name: s.keyName,
            "OS-SRV-USG:launched_at": s.launchedAt,
            "OS-SRV-USG:terminated_at": s.status === "DELETED" ? s.updated : null,
            "OS-EXT-SRV-ATTR:host": s.computeHost,
            "OS-EXT-SRV-ATTR:instance_name": `instance-${s.id.slice(0, 8)}`,
            "OS-EXT-SRV-ATTR:hypervisor_hostname": s.computeHost,
            "OS-EXT-STS:task_state": s.task_state,
            "OS-EXT-STS:vm_state": vmState(s),
            "OS-EXT-STS:power_state": s.status === "ACTIVE" || s.status === "MIGRATING" ? 1 : s.status === "SHUTOFF" ? 4 : 0,
            "os-extended-volumes:volumes_attached": s.volumes.map((v) => (mv.atLeast("2.3") ? { id: v.volumeId, delete_on_termination: false } : { id: v.volumeId })),
            security_groups: s.status === "ERROR" ? undefined : s.securityGroups.map((name) => ({ name })),
        };
        if (s.fault) body.fault = s.fault;
        if (mv.atLeast("2.3")) Object.assign(body, { "OS-EXT-SRV-ATTR:hostname": s.name, "OS-EXT-SRV-ATTR:reservation_id": `r-${s.id.slice(0, 8)}`, "OS-EXT-SRV-ATTR:launch_index": 0, "OS-EXT-SRV-ATTR:kernel_id": "", "OS-EXT-SRV-ATTR:ramdisk_id": "", "OS-EXT-SRV-ATTR:root_device_name": "/dev/vda", "OS-EXT-SRV-ATTR:user_data": s.userData === undefined ? null : Buffer.from(s.userData).toString("base64") });
        if (mv.atLeast("2.9")) body.locked = false;
        if (mv.atLeast("2.16")) body.host_status = s.computeHost ? "UP" : "";
        if (mv.atLeast("2.19")) body.description = null;
        if (mv.atLeast("2.26")) body.tags = [];
        if (mv.atLeast("2.73")) body.locked_reason = null;
        return body;
    };

    /** The NICs of a new server (servers.py _get_requested_networks): ports bound to it, or ports made on a network. */
    const nics = (id: string, req: ApiRequest, networks: unknown): { ports: string[]; own: string[] } => {
        if (networks === undefined && req.microversion.atLeast("2.37")) throw novaError(400, "Invalid input for field/attribute server. Value: {...}. 'networks' is a required property");
        const wanted: { port?: string; uuid?: string; fixed_ip?: string }[] = networks === undefined || networks === "auto" ? [{ uuid: state.network.id }] : networks === "none" ? [] : (networks as never);
        if (!Array.isArray(wanted)) throw novaError(400, `Invalid input for field/attribute networks. Value: ${JSON.stringify(networks)}.`);
        if (!wanted.length) throw novaError(400, "Invalid input: the lab starts a server with a NIC only (networks \"none\").");
        for (const nic of wanted) {
            if (nic.port) {
                const p = state.ports.get(nic.port);
                if (!p) throw novaError(400, `Port id ${nic.port} could not be found.`);
                if (p.device_id) throw novaError(409, `Port ${nic.port} is still in use.`);
            } else if (!state.tenantNetwork(String(nic.uuid))) throw novaError(400, `Network ${nic.uuid} could not be found.`);
        }
        const ports: string[] = [];
        const own: string[] = [];
        for (const nic of wanted) {
            let portId = nic.port;
            if (!portId) {
                const net = state.tenantNetwork(String(nic.uuid))!;
                const index = nic.fixed_ip ? indexOfAddress(state.lab, nic.fixed_ip, net) : allocateIndexIn(state.lab, net, `server:${id}`);
                if (index === undefined) throw novaError(400, `Invalid input: fixed IP ${nic.fixed_ip} is not a valid IP for the specified subnet.`);
                if (nic.fixed_ip && !state.lab.claimIndex(index, `server:${id}`)) throw novaError(409, `Fixed IP address ${nic.fixed_ip} is already in use on instance ${id}.`);
                const now = isoNow();
                portId = randomUUID();
                state.ports.set(portId, { id: portId, name: "", description: "", network_id: net.id, mac_address: state.macOf(index), admin_state_up: true, status: "DOWN", device_id: "", device_owner: "", fixed_ips: fixedIpsOf(state.lab, net, [index]), allowed_address_pairs: [], security_groups: [state.defaultSecGroupId], port_security_enabled: true, created_at: now, updated_at: now, revision_number: 1, indexes: [index] });
                own.push(portId);
            }
            ports.push(portId);
        }
        return { ports, own };
    };

    /** POST /servers (api-ref compute "Create Server"): 202, BUILD; the checks of servers.py create. */
    const create = (req: ApiRequest) => {
        const body = req.body?.server;
        if (!body || typeof body !== "object") throw novaError(400, "Invalid input for field/attribute server. 'server' is a required property");
        if (typeof body.name !== "string" || !body.name.trim()) throw novaError(400, "Invalid input for field/attribute server. Value: {...}. 'name' is a required property");
        const ref = (value: unknown) => String(value ?? "").split("/").pop()!;
        const flavorId = ref(body.flavorRef);
        if (!state.flavors.some((f) => f.id === flavorId)) throw novaError(400, "Invalid flavorRef provided.");
        const imageId = ref(body.imageRef);
        if (!imageId) throw novaError(400, "Block Device Mapping is Invalid: Boot sequence for the instance and image/block device mapping combination is not valid.");
        if (imageId !== state.image.id) throw novaError(400, "Can not find requested image");
        if (body.key_name && !state.keypairs.has(body.key_name)) throw novaError(400, "Invalid key_name provided.");
        if ((body.min_count ?? 1) !== 1 || (body.max_count ?? 1) !== 1) throw novaError(400, "Invalid input: the lab builds one server per request (min_count, max_count).");
        let userData: string | undefined;
        if (body.user_data !== undefined && body.user_data !== null) {
            const text = String(body.user_data);
            if (!/^[A-Za-z0-9+/\s]*={0,2}\s*$/.test(text)) throw novaError(400, `Invalid input for field/attribute user_data. Value: ${text.slice(0, 20)}... is not a 'base64'`);
            if (text.length > 65535) throw novaError(400, "Invalid input for field/attribute user_data. Value: ... is too long");
            userData = Buffer.from(text, "base64").toString("utf8");
        }
        const hints = req.body?.["os:scheduler_hints"] ?? req.body?.["OS-SCH-HNT:scheduler_hints"] ?? {};
        const groupId = Array.isArray(hints.group) ? hints.group[0] : hints.group;
        if (groupId && !state.serverGroups.has(groupId)) throw novaError(400, `Instance group ${groupId} could not be found.`);
        // nova/compute/api.py _validate_and_build_base_options: a zone Nova does not have is 400 (InvalidRequest); "zone:host" skips it, as a forced host does.
        const [zone, forcedHost] = String(body.availability_zone || "nova").split(":");
        if (body.availability_zone && !forcedHost && !state.zones.includes(zone)) throw novaError(400, "The requested availability zone is not available");
        const groups = ((body.security_groups as { name: string }[] | undefined) ?? [{ name: "default" }]).map((g) => g.name);
        for (const name of groups) if (![...state.secGroups.values()].some((g) => g.name === name || g.id === name)) throw novaError(400, `Security group ${name} not found for project ${project()}.`);

        const id = randomUUID();
        const { ports, own } = nics(id, req, body.networks);
        const now = isoNow();
        const s: Server = {
            id,
            name: body.name,
            status: "BUILD",
            task_state: "scheduling",
            flavorId,
            imageId,
            keyName: body.key_name ?? null,
            metadata: { ...(body.metadata ?? {}) },
            availabilityZone: zone,
            ports,
            ownPorts: own,
            securityGroups: groups,
            group: groupId,
            computeHost: null,
            userData,
            created: now,
            updated: now,
            launchedAt: null,
            volumes: [],
            busy: Promise.resolve(),
        };
        state.servers.set(id, s);
        for (const portId of ports) Object.assign(state.ports.get(portId)!, { device_id: id, device_owner: `compute:${s.availabilityZone}` });
        // nova/compute/api.py _provision_instances: the instance joins its group before it is scheduled.
        if (groupId) state.serverGroups.get(groupId)!.members.push(id);
        s.computeHost = life.place(s) ?? null;
        s.task_state = s.computeHost ? "spawning" : null;
        life.build(s);
        const adminPass = randomBytes(9).toString("base64url");
        return { status: 202, body: { server: { id, links: link("servers", id), "OS-DCF:diskConfig": "MANUAL", security_groups: groups.map((name) => ({ name })), adminPass } }, headers: { location: `${base()}/compute/v2.1/${project()}/servers/${id}` } };
    };

    /** GET /servers and /servers/detail (api-ref compute "List Servers"): name is a regular expression, as Nova reads it. */
    const list = (req: ApiRequest, detailed: boolean) => {
        let found = [...state.servers.values()].filter((s) => s.status !== "DELETED" || req.query.get("deleted") === "true");
        const name = req.query.get("name");
        if (name !== null) {
            let re: RegExp;
            try {
                re = new RegExp(name);
            } catch {
                re = new RegExp(name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
            }
            found = found.filter((s) => re.test(s.name));
        }
        found = filterBy(found, req.query, ["status"]).filter((s) => !req.query.get("host") || s.computeHost === req.query.get("host"));
        return { status: 200, body: { servers: found.map((s) => (detailed ? view(s, req) : { id: s.id, name: s.name, links: link("servers", s.id) })) } };
    };

    /** POST /servers/{id}/action (api-ref compute "Stop Server (os-stop Action)", "Start Server (os-start Action)", "Reboot Server", "Live-Migrate Server"). */
    const action = (req: ApiRequest) => {
        const s = server(req.params[0]);
        const [name] = Object.keys(req.body ?? {});
        const refuse = (what: string) => {
            if (s.task_state) throw novaError(409, `Cannot '${what}' instance ${s.id} while it is in task_state ${s.task_state}`);
            throw novaError(409, `Cannot '${what}' instance ${s.id} while it is in vm_state ${vmState(s)}`);
        };
        switch (name) {
            case "os-stop":
                if (s.status !== "ACTIVE" || s.task_state) refuse("stop");
                life.power(s, "SHUTOFF");
                return { status: 202 };
            case "os-start":
                if (s.status !== "SHUTOFF" || s.task_state) refuse("start");
                life.power(s, "ACTIVE");
                return { status: 202 };
            case "reboot":
                if (!["ACTIVE", "SHUTOFF"].includes(s.status) || s.task_state) refuse("reboot");
                if (s.status === "ACTIVE") life.power(s, "SHUTOFF");
                life.power(s, "ACTIVE");
                return { status: 202 };
            case "os-migrateLive": {
                // api-ref compute "Live-Migrate Server (os-migrateLive Action)"; nova/api/openstack/compute/
                // migrate_server.py _migrate_live: an unknown host is 400 (ComputeHostNotFound), a server not
                // ACTIVE or PAUSED 409; the conductor's pre-checks fail the request (400) before 2.34 and the
                // migration itself (the server stays where it is) from 2.34 on.
                if (!["ACTIVE", "PAUSED"].includes(s.status) || s.task_state) refuse("os-migrateLive");
                const host = (req.body["os-migrateLive"] as { host?: string | null } | null)?.host ?? null;
                if (host !== null && !state.computeHosts.includes(host)) throw novaError(400, `Compute host ${host} could not be found.`);
                const refused = life.migrateLive(s, host);
                if (refused && !req.microversion.atLeast("2.34")) throw novaError(400, refused);
                return { status: 202 };
            }
            default:
                throw novaError(400, `There is no such action: ${name ?? "(none)"}`);
        }
    };

    const S = String.raw`^\/compute\/v2\.1(?:\/${"[0-9a-f]{32}"})?\/servers`;
    const r = (method: string, tail: string, handler: Route["handler"]): Route => ({ method, path: new RegExp(`${S}${tail}$`), handler, service: "compute" });
    return [
        r("POST", "", create),
        r("GET", "", (req) => list(req, false)),
        r("GET", String.raw`\/detail`, (req) => list(req, true)),
        // GET /servers/{id} (api-ref "Show Server Details"); 404 "Instance … could not be found." once deleted.
        r("GET", String.raw`\/([^/]+)`, (req) => ({ status: 200, body: { server: view(server(req.params[0]), req) } })),
        // PUT /servers/{id} (api-ref "Update Server"): the name (the lab host keeps its name).
        r("PUT", String.raw`\/([^/]+)`, (req) => {
            const s = server(req.params[0]);
            const body = req.body?.server ?? {};
            if (typeof body.name === "string") s.name = body.name;
            s.updated = isoNow();
            return { status: 200, body: { server: view(s, req) } };
        }),
        // DELETE /servers/{id} (api-ref "Delete Server"): 204; the provider waits for DELETED or 404.
        r("DELETE", String.raw`\/([^/]+)`, (req) => {
            const s = server(req.params[0]);
            if (s.status !== "DELETED" && s.task_state !== "deleting") life.destroy(s);
            return { status: 204 };
        }),
        r("POST", String.raw`\/([^/]+)\/action`, action),
        // Metadata (api-ref "Server metadata"): list, update (merge), replace, one item, delete one item.
        r("GET", String.raw`\/([^/]+)\/metadata`, (req) => ({ status: 200, body: { metadata: server(req.params[0]).metadata } })),
        r("POST", String.raw`\/([^/]+)\/metadata`, (req) => {
            const s = server(req.params[0]);
            Object.assign(s.metadata, req.body?.metadata ?? {});
            return { status: 200, body: { metadata: s.metadata } };
        }),
        r("PUT", String.raw`\/([^/]+)\/metadata`, (req) => {
            const s = server(req.params[0]);
            s.metadata = { ...(req.body?.metadata ?? {}) };
            return { status: 200, body: { metadata: s.metadata } };
        }),
        r("GET", String.raw`\/([^/]+)\/metadata\/([^/]+)`, (req) => {
            const s = server(req.params[0]);
            const key = decodeURIComponent(req.params[1]);
            if (!(key in s.metadata)) throw novaError(404, "Metadata item was not found");
            return { status: 200, body: { meta: { [key]: s.metadata[key] } } };
        }),
        r("DELETE", String.raw`\/([^/]+)\/metadata\/([^/]+)`, (req) => {
            const s = server(req.params[0]);
            const key = decodeURIComponent(req.params[1]);
            if (!(key in s.metadata)) throw novaError(404, "Metadata item was not found");
            delete s.metadata[key];
            return { status: 204 };
        }),
        // GET /servers/{id}/tags (api-ref "List Tags", from 2.26; below it the route does not exist).
        r("GET", String.raw`\/([^/]+)\/tags`, (req) => {
            if (!req.microversion.atLeast("2.26")) throw novaError(404, "The resource could not be found.");
            server(req.params[0]);
            return { status: 200, body: { tags: [] } };
        }),
        // GET /servers/{id}/os-security-groups (api-ref "List Security Groups By Server").
        r("GET", String.raw`\/([^/]+)\/os-security-groups`, (req) => {
            const s = server(req.params[0]);
            const groups = [...state.secGroups.values()].filter((g) => s.securityGroups.includes(g.name));
            return { status: 200, body: { security_groups: groups.map((g) => ({ id: g.id, name: g.name, description: g.description, tenant_id: project(), rules: [] })) } };
        }),
    ];
}
