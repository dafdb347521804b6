/**
 * Nova v2.1 besides servers: the version documents (microversion discovery), flavors (the provider's lookup by
 * name lists /flavors/detail: gophercloud/utils openstack/compute/v2/flavors/utils.go IDsFromName), keypairs
 * (resource_openstack_compute_keypair_v2.go), server groups (resource_openstack_compute_servergroup_v2.go:
 * `policy` at 2.64 when rules are set, else a plain request whose `policy` Nova refuses before 2.64 and the
 * provider's fallback with `policies`; read at 2.64, then without a microversion) and volume attachments
 * (resource_openstack_compute_volume_attach_v2.go and compute_volume_attach_v2.go: attach, poll the
 * attachment and the volume until in-use, detach until 404). Shapes and errors from the api-ref
 * (https://docs.openstack.org/api-ref/compute/) and nova/api/openstack/compute/{flavors,keypairs,server_groups,volumes}.py.
 */
import { createHash, randomUUID } from "node:crypto";
import { ApiRequest, cinderNow, CloudState, isoNow, Keypair, novaError, Route, ServerGroup } from "./state";

export const COMPUTE_MAX_MICROVERSION = "2.79";

export function computeResourceRoutes(state: CloudState, base: () => string): Route[] {
    const project = () => state.identity.project.id;
    const C = String.raw`^\/compute\/v2\.1(?:\/[0-9a-f]{32})?`;
    const r = (method: string, tail: string, handler: Route["handler"]): Route => ({ method, path: new RegExp(`${C}${tail}$`), handler, service: "compute" });
    const version = () => ({ id: "v2.1", status: "CURRENT", version: COMPUTE_MAX_MICROVERSION, min_version: "2.1", updated: "2013-07-23T11:33:21Z", links: [{ rel: "self", href: `${base()}/compute/v2.1/` }], "media-types": [{ base: "application/json", type: "application/vnd.openstack.compute+json;version=2.1" }] });

    // Flavors.
    const flavorView = (f: CloudState["flavors"][number], req: ApiRequest) => ({
        id: f.id,
        name: f.name,
        ram: f.ram,
        disk: f.disk,
        vcpus: f.vcpus,
        swap: "",
        rxtx_factor: 1.0,
        "OS-FLV-EXT-DATA:ephemeral": 0,
        "OS-FLV-DISABLED:disabled": false,
        "os-flavor-access:is_public": true,
        ...(req.microversion.atLeast("2.55") ? { description: null } : {}),
        ...(req.microversion.atLeast("2.61") ? { extra_specs: {} } : {}),
        links: [{ rel: "self", href: `${base()}/compute/v2.1/flavors/${f.id}` }],
    });

    // Keypairs: Nova's fingerprint of an SSH key is the MD5 of its key blob (nova/crypto.py generate_fingerprint).
    const fingerprint = (publicKey: string) => {
        // nova/crypto.py generate_fingerprint: a key cryptography's load_ssh_public_key cannot read is 400 InvalidKeypair.
        const blob = sshKeyBlob(publicKey);
        if (!blob) throw novaError(400, "Keypair data is invalid: failed to generate fingerprint");
        return createHash("md5").update(blob).digest("hex").replace(/(..)(?!$)/g, "$1:");
    };
    const keypairView = (k: Keypair, req: ApiRequest, full: boolean) => ({
        name: k.name,
        public_key: k.public_key,
        fingerprint: k.fingerprint,
        ...(req.microversion.atLeast("2.2") ? { type: k.type } : {}),
        ...(full ? { user_id: state.identity.user.id, deleted: false, created_at: k.created_at, updated_at: null, deleted_at: null, id: 1 } : {}),
    });
    const keypair = (name: string) => {
        const k = state.keypairs.get(name);
        if (!k) throw novaError(404, `Keypair ${name} not found for user ${state.identity.user.id}`);
        return k;
    };

    // Server groups.
    const groupView = (g: ServerGroup, req: ApiRequest) =>
        req.microversion.atLeast("2.64")
            ? { id: g.id, name: g.name, policy: g.policy, rules: g.rules, members: g.members, project_id: project(), user_id: state.identity.user.id }
            : { id: g.id, name: g.name, policies: [g.policy], members: g.members, metadata: {}, ...(req.microversion.atLeast("2.13") ? { project_id: project(), user_id: state.identity.user.id } : {}) };
    const group = (id: string) => {
        const g = state.serverGroups.get(id);
        if (!g) throw novaError(404, `Instance group ${id} could not be found.`);
        return g;
    };
    /** POST /os-server-groups: the request schema of the microversion (nova/api/openstack/compute/schemas/server_groups.py). */
    const createGroup = (req: ApiRequest) => {
        const body = req.body?.server_group;
        if (!body || typeof body.name !== "string") throw novaError(400, "Invalid input for field/attribute server_group. Value: {...}. 'name' is a required property");
        const at264 = req.microversion.atLeast("2.64");
        const unexpected = at264 ? "policies" : "policy";
        if (unexpected in body) throw novaError(400, `Invalid input for field/attribute server_group. Value: ${JSON.stringify(body)}. Additional properties are not allowed ('${unexpected}' was unexpected)`);
        if (!at264 && "rules" in body) throw novaError(400, `Invalid input for field/attribute server_group. Value: ${JSON.stringify(body)}. Additional properties are not allowed ('rules' was unexpected)`);
        const policies: string[] = at264 ? [body.policy] : body.policies;
        const allowed = req.microversion.atLeast("2.15") ? ["anti-affinity", "affinity", "soft-anti-affinity", "soft-affinity"] : ["anti-affinity", "affinity"];
        if (!Array.isArray(policies) || policies.length !== 1 || !allowed.includes(policies[0])) {
            throw novaError(400, `Invalid input for field/attribute ${at264 ? "policy" : "policies"}. Value: ${JSON.stringify(at264 ? body.policy : body.policies)}. Must be one of ${allowed.map((a) => `'${a}'`).join(", ")}`);
        }
        const rules = at264 ? { ...(body.rules ?? {}) } : {};
        if (rules.max_server_per_host !== undefined && policies[0] !== "anti-affinity") throw novaError(400, "Only anti-affinity policy supports the max_server_per_host rule.");
        const g: ServerGroup = { id: randomUUID(), name: body.name, policy: policies[0], rules, members: [] };
        state.serverGroups.set(g.id, g);
        return { status: 200, body: { server_group: groupView(g, req) } };
    };

    // Volume attachments (api-ref "Servers with volume attachments"): before 2.89 the attachment id is the volume id.
    const attachmentView = (serverId: string, v: { volumeId: string; device: string }, req: ApiRequest) => ({
        id: v.volumeId,
        serverId,
        volumeId: v.volumeId,
        device: v.device,
        ...(req.microversion.atLeast("2.70") ? { tag: null } : {}),
        ...(req.microversion.atLeast("2.79") ? { delete_on_termination: false } : {}),
    });
    const serverOf = (id: string) => {
        const s = state.servers.get(id);
        if (!s || s.status === "DELETED") throw novaError(404, `Instance ${id} could not be found.`);
        return s;
    };
    /** POST /servers/{id}/os-volume_attachments: the volume reserved in Cinder, attached to the lab host, in-use. */
    const attach = async (req: ApiRequest) => {
        const s = serverOf(req.params[0]);
        const volumeId = String(req.body?.volumeAttachment?.volumeId ?? "");
        const v = state.volumes.get(volumeId);
        if (!v) throw novaError(404, `Volume ${volumeId} could not be found.`);
        if (!["ACTIVE", "SHUTOFF"].includes(s.status) || s.task_state) {
            throw novaError(409, `Cannot 'attach_volume' instance ${s.id} while it is in ${s.task_state ? `task_state ${s.task_state}` : `vm_state ${s.status === "BUILD" ? "building" : s.status.toLowerCase()}`}`);
        }
        if (v.status !== "available") throw novaError(400, `Invalid volume: Volume ${v.id} status must be available or downloading to reserve, but the current status is ${v.status}.`);
        v.status = "attaching";
        let device: string;
        try {
            device = await state.lab.attachVolume(s.hostName!, v.id);
        } catch (e) {
            v.status = "available";
            throw novaError(500, `Unexpected API Error. ${(e as Error).message}`);
        }
        v.status = "in-use";
        v.attachment = { serverId: s.id, device, attachedAt: cinderNow(), attachmentId: randomUUID() };
        v.updated_at = cinderNow();
        s.volumes.push({ volumeId: v.id, device });
        return { status: 200, body: { volumeAttachment: attachmentView(s.id, { volumeId: v.id, device }, req) } };
    };
    /** DELETE /servers/{id}/os-volume_attachments/{volume_id}: 202, detaching, then available and the attachment gone. */
    const detach = (req: ApiRequest) => {
        const s = serverOf(req.params[0]);
        const volumeId = req.params[1];
        const attached = s.volumes.find((a) => a.volumeId === volumeId);
        if (!attached) throw novaError(404, `Volume ${volumeId} is not attached to instance ${s.id}`);
        const v = state.volumes.get(volumeId);
        if (v?.status === "detaching") throw novaError(400, "Invalid volume: Unable to detach volume. Volume status must be 'in-use' and attach_status must be 'attached' to detach.");
        if (v) v.status = "detaching";
        state.track(
            state.lab.detachVolume(s.hostName!, volumeId).finally(() => {
                s.volumes = s.volumes.filter((a) => a.volumeId !== volumeId);
                if (v) {
                    v.status = "available";
                    v.attachment = undefined;
                    v.updated_at = cinderNow();
                }
            }),
        );
        return { status: 202 };
    };

    return [
        // GET / (api-ref compute "List All Major Versions"), GET /v2.1 ("Show Details of Specific API Version").
        { method: "GET", path: /^\/compute\/?$/, open: true, handler: () => ({ status: 200, body: { versions: [version()] } }) },
        { method: "GET", path: /^\/compute\/v2\.1\/?$/, open: true, handler: () => ({ status: 200, body: { version: version() } }) },
        // GET /flavors, /flavors/detail, /flavors/{id} (api-ref "List Flavors", "List Flavors With Details", "Show Flavor Details").
        r("GET", String.raw`\/flavors`, () => ({ status: 200, body: { flavors: state.flavors.map((f) => ({ id: f.id, name: f.name, links: [] })) } })),
        r("GET", String.raw`\/flavors\/detail`, (req) => ({ status: 200, body: { flavors: state.flavors.map((f) => flavorView(f, req)) } })),
        r("GET", String.raw`\/flavors\/([^/]+)`, (req) => {
            const f = state.flavors.find((x) => x.id === req.params[0]);
            if (!f) throw novaError(404, `Flavor ${req.params[0]} could not be found.`);
            return { status: 200, body: { flavor: flavorView(f, req) } };
        }),
        // GET /flavors/{id}/os-extra_specs (api-ref "List Extra Specs For A Flavor"): none.
        r("GET", String.raw`\/flavors\/([^/]+)\/os-extra_specs`, () => ({ status: 200, body: { extra_specs: {} } })),
        // Keypairs (api-ref "Keypairs (keypairs)"): import only; 200 before 2.2, 201 from it; delete 202 / 204.
        r("GET", String.raw`\/os-keypairs`, (req) => ({ status: 200, body: { keypairs: [...state.keypairs.values()].map((k) => ({ keypair: keypairView(k, req, false) })) } })),
        r("POST", String.raw`\/os-keypairs`, (req) => {
            const body = req.body?.keypair ?? {};
            const name = String(body.name ?? "");
            if (!name.length || name.length > 255) throw novaError(400, `Invalid input for field/attribute name. Value: ${name}. '${name}' is ${name.length ? "too long" : "too short"}`);
            // nova/compute/api.py KeypairAPI._validate_new_key_pair: before 2.92 (above this lab's maximum) only [a-zA-Z0-9 _-], else 400 InvalidKeypair.
            if (!/^[A-Za-z0-9 _-]+$/.test(name)) throw novaError(400, "Keypair data is invalid: Keypair name contains unsafe characters");
            if (state.keypairs.has(name)) throw novaError(409, `Key pair '${name}' already exists.`);
            if (!body.public_key) throw novaError(400, "Keypair data is invalid: the lab imports keys only (public_key)");
            const k: Keypair = { name, public_key: String(body.public_key), fingerprint: fingerprint(String(body.public_key)), type: body.type ?? "ssh", created_at: isoNow() };
            state.keypairs.set(name, k);
            return { status: req.microversion.atLeast("2.2") ? 201 : 200, body: { keypair: { ...keypairView(k, req, false), user_id: state.identity.user.id } } };
        }),
        r("GET", String.raw`\/os-keypairs\/([^/]+)`, (req) => ({ status: 200, body: { keypair: keypairView(keypair(decodeURIComponent(req.params[0])), req, true) } })),
        r("DELETE", String.raw`\/os-keypairs\/([^/]+)`, (req) => {
            state.keypairs.delete(keypair(decodeURIComponent(req.params[0])).name);
            return { status: req.microversion.atLeast("2.2") ? 204 : 202 };
        }),
        // Server groups (api-ref "Server groups (os-server-groups)"): create 200, show, list, delete 204.
        r("GET", String.raw`\/os-server-groups`, (req) => ({ status: 200, body: { server_groups: [...state.serverGroups.values()].map((g) => groupView(g, req)) } })),
        r("POST", String.raw`\/os-server-groups`, createGroup),
        r("GET", String.raw`\/os-server-groups\/([^/]+)`, (req) => ({ status: 200, body: { server_group: groupView(group(req.params[0]), req) } })),
        r("DELETE", String.raw`\/os-server-groups\/([^/]+)`, (req) => {
            state.serverGroups.delete(group(req.params[0]).id);
            return { status: 204 };
        }),
        // Volume attachments (api-ref "List/Attach/Show/Detach a volume"): attach 200, detach 202.
        r("GET", String.raw`\/servers\/([^/]+)\/os-volume_attachments`, (req) => {
            const s = serverOf(req.params[0]);
            return { status: 200, body: { volumeAttachments: s.volumes.map((v) => attachmentView(s.id, v, req)) } };
        }),
        r("POST", String.raw`\/servers\/([^/]+)\/os-volume_attachments`, attach),
        r("GET", String.raw`\/servers\/([^/]+)\/os-volume_attachments\/([^/]+)`, (req) => {
            const s = serverOf(req.params[0]);
            const v = s.volumes.find((a) => a.volumeId === req.params[1]);
            if (!v) throw novaError(404, `No volume Block Device Mapping with id ${req.params[1]}.`);
            return { status: 200, body: { volumeAttachment: attachmentView(s.id, v, req) } };
        }),
        r("DELETE", String.raw`\/servers\/([^/]+)\/os-volume_attachments\/([^/]+)`, detach),
        // GET /os-availability-zone (api-ref "Get Availability Zone Information").
        r("GET", String.raw`\/os-availability-zone`, () => ({ status: 200, body: { availabilityZoneInfo: state.zones.map((zoneName) => ({ zoneName, zoneState: { available: true }, hosts: null })) } })),
    ];
}

/**
 * The key blob of an OpenSSH public key line, as cryptography's load_ssh_public_key reads it (what Nova calls):
 * "TYPE BASE64 [comment]", the blob's own type string equal to TYPE, then the key's fields and nothing after
 * them; else undefined.
 */
export function sshKeyBlob(line: string): Buffer | undefined {
    const [type, base64] = line.split(" ");
    if (!type || !base64 || !/^[A-Za-z0-9+/]+={0,2}$/.test(base64.trim()) || base64.trim().length % 4 !== 0) return undefined;
    const blob = Buffer.from(base64.trim(), "base64");
    let at = 0;
    const next = (): Buffer | undefined => {
        if (at + 4 > blob.length) return undefined;
        const size = blob.readUInt32BE(at);
        if (at + 4 + size > blob.length) return undefined;
        const value = blob.subarray(at + 4, at + 4 + size);
        at += 4 + size;
        return value;
    };
    if (next()?.toString("latin1") !== type) return undefined;
    const curves: Record<string, string> = { "ecdsa-sha2-nistp256": "nistp256", "ecdsa-sha2-nistp384": "nistp384", "ecdsa-sha2-nistp521": "nistp521" };
    if (type === "ssh-ed25519") {
        if (next()?.length !== 32) return undefined;
    } else if (type === "ssh-rsa" || type === "ssh-dss") {
        for (let i = type === "ssh-rsa" ? 2 : 4; i > 0; i--) if (!next()?.length) return undefined;
    } else if (curves[type]) {
        if (next()?.toString("latin1") !== curves[type] || next()?.[0] !== 4) return undefined;
    } else return undefined;
    return at === blob.length ? blob : undefined;
}
