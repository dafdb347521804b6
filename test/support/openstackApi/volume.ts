/**
 * Cinder v3: a volume is a lab volume (a loop device the lab owns, of the API's `volumeMb` whatever size
 * was asked for), creating → available, in-use while Nova has it attached (compute.ts os-volume_attachments).
 * What the provider calls: terraform-provider-openstack v1.54.1 resource_openstack_blockstorage_volume_v3.go
 * (create, wait creating → available, read, update, delete: detach what is attached, wait, delete, wait for 404)
 * and compute_volume_attach_v2.go (the volume polled until in-use); shapes from gophercloud v1.8.0
 * openstack/blockstorage/v3/volumes and the api-ref (https://docs.openstack.org/api-ref/block-storage/v3/#volumes-volumes).
 */
import { randomUUID } from "node:crypto";
import { cinderError, cinderNow, CloudState, filterBy, Route, Volume } from "./state";

export const VOLUME_MAX_MICROVERSION = "3.59";

/** Cinder's refusal of a delete (cinder/volume/api.py API.delete, the `expected` statuses and its message). */
const DELETE_REFUSED =
    "Invalid volume: Volume status must be available or error or error_restoring or error_extending or error_managing and must not be migrating, attached, belong to a group, have snapshots, awaiting a transfer, or be disassociated from snapshots after volume transfer.";

export function volumeView(state: CloudState, v: Volume): Record<string, unknown> {
    const a = v.attachment;
    const server = a ? state.servers.get(a.serverId) : undefined;
    return {
        id: v.id,
        name: v.name,
        description: v.description,
        size: v.size,
        status: v.status,
        availability_zone: v.availability_zone,
        volume_type: v.volume_type,
        metadata: v.metadata,
        created_at: v.created_at,
        updated_at: v.updated_at,
        attachments: a ? [{ server_id: a.serverId, attachment_id: a.attachmentId, attached_at: a.attachedAt, host_name: server?.computeHost ?? null, volume_id: v.id, device: a.device, id: v.id }] : [],
        bootable: "false",
        encrypted: false,
        multiattach: false,
        snapshot_id: null,
        source_volid: null,
        backup_id: null,
        consistencygroup_id: null,
        group_id: null,
        replication_status: null,
        migration_status: null,
        user_id: state.identity.user.id,
        "os-vol-tenant-attr:tenant_id": state.identity.project.id,
        "os-vol-host-attr:host": "lab@lvm#lab",
        "os-vol-mig-status-attr:migstat": null,
        "os-vol-mig-status-attr:name_id": null,
        volume_image_metadata: undefined,
        links: [],
    };
}

export function volumeRoutes(state: CloudState, base: () => string): Route[] {
    const version = () => ({ id: "v3.0", status: "CURRENT", version: VOLUME_MAX_MICROVERSION, min_version: "3.0", updated: "2016-02-08T12:20:21Z", links: [{ rel: "self", href: `${base()}/volume/v3/` }], "media-types": [{ base: "application/json", type: "application/vnd.openstack.volume+json;version=3" }] });
    const volume = (id: string) => {
        const v = state.volumes.get(id);
        if (!v) throw cinderError(404, `Volume ${id} could not be found.`);
        return v;
    };
    /** cinder/volume/volume_types.py get_by_name_or_id: a name is 404 VolumeTypeNotFoundByName, a UUID 404 VolumeTypeNotFound. */
    const volumeType = (identity: string) => {
        const uuid = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i.test(identity);
        const found = state.volumeTypes.find((t) => (uuid ? t.id === identity : t.name === identity));
        if (!found) throw cinderError(404, uuid ? `Volume type ${identity} could not be found.` : `Volume type with name ${identity} could not be found.`);
        return found;
    };
    const typeView = (t: { name: string; id: string }) => ({ id: t.id, name: t.name, description: null, is_public: true, extra_specs: {}, "os-volume-type-access:is_public": true, qos_specs_id: null });
    /** The project in the URL is the token's (cinder/api/openstack/wsgi.py: another one is a malformed URL). */
    const inProject = (project: string) => {
        if (project !== state.identity.project.id) throw cinderError(400, "Malformed request url");
    };
    const P = String.raw`^\/volume\/v3\/([^/]+)`;
    const route = (method: string, tail: string, handler: Route["handler"]): Route => ({
        method,
        path: new RegExp(`${P}${tail}$`),
        service: "volume",
        handler: (req) => {
            inProject(req.params[0]);
            return handler({ ...req, params: req.params.slice(1) });
        },
    });

    return [
        // GET / (api-ref block-storage v3 "List All Api Versions"): 300.
        { method: "GET", path: /^\/volume\/?$/, open: true, handler: () => ({ status: 300, body: { versions: [version()] } }) },
        // GET /v3/ (api-ref "Show API v3 details").
        { method: "GET", path: /^\/volume\/v3\/?$/, open: true, handler: () => ({ status: 200, body: { versions: [version()] } }) },
        // POST /v3/{project_id}/volumes (api-ref "Create a volume"): 202, creating, then available.
        route("POST", String.raw`\/volumes`, (req) => {
            const body = req.body?.volume ?? {};
            const size = Number(body.size);
            if (!Number.isInteger(size) || size < 1) throw cinderError(400, `Invalid input received: size ${JSON.stringify(body.size ?? null)} must be an integer and greater than 0`);
            for (const key of ["snapshot_id", "source_volid", "imageRef", "backup_id"]) if (body[key]) throw cinderError(400, `Invalid input received: the lab makes empty volumes only (${key})`);
            const type = volumeType(body.volume_type ? String(body.volume_type) : "__DEFAULT__");
            const zone = String(body.availability_zone || "nova");
            // cinder/volume/flows/api/create_volume.py _extract_availability_zone: 400 InvalidAvailabilityZone.
            if (!state.zones.includes(zone)) throw cinderError(400, `Availability zone '${zone}' is invalid.`);
            const now = cinderNow();
            const v: Volume = { id: randomUUID(), name: String(body.name ?? ""), description: String(body.description ?? ""), size, status: "creating", availability_zone: zone, volume_type: type.name, metadata: { ...(body.metadata ?? {}) }, created_at: now, updated_at: now };
            state.volumes.set(v.id, v);
            state.track(
                state.lab.createVolume(v.id, state.volumeMb).then(
                    () => void (v.status = "available"),
                    () => void (v.status = "error"),
                ),
            );
            return { status: 202, body: { volume: volumeView(state, v) } };
        }),
        // GET /v3/{project_id}/types and /types/{id} (api-ref "List all volume types", "Show volume type detail"): by id or name, as cinderclient finds one.
        route("GET", String.raw`\/types`, (req) => ({ status: 200, body: { volume_types: filterBy(state.volumeTypes.map(typeView), req.query, ["name", "id"]) } })),
        route("GET", String.raw`\/types\/([^/]+)`, (req) => {
            const t = state.volumeTypes.find((x) => x.id === req.params[0] || x.name === decodeURIComponent(req.params[0]));
            if (!t) throw cinderError(404, `Volume type ${decodeURIComponent(req.params[0])} could not be found.`);
            return { status: 200, body: { volume_type: typeView(t) } };
        }),
        // GET /v3/{project_id}/volumes and /volumes/detail (api-ref "List accessible volumes (with details)").
        route("GET", String.raw`\/volumes(\/detail)?`, (req) => {
            const found = filterBy([...state.volumes.values()], req.query, ["name", "status", "id", "availability_zone"]);
            const view = (v: Volume) => (req.params[0] ? volumeView(state, v) : { id: v.id, name: v.name, links: [] });
            return { status: 200, body: { volumes: found.map(view) } };
        }),
        // GET /v3/{project_id}/volumes/{volume_id} (api-ref "Show a volume's details"); 404 ends the delete wait.
        route("GET", String.raw`\/volumes\/([^/]+)`, (req) => ({ status: 200, body: { volume: volumeView(state, volume(req.params[0])) } })),
        // PUT /v3/{project_id}/volumes/{volume_id} (api-ref "Update a volume"): name, description, metadata.
        route("PUT", String.raw`\/volumes\/([^/]+)`, (req) => {
            const v = volume(req.params[0]);
            const body = req.body?.volume ?? {};
            if (body.name !== undefined) v.name = String(body.name);
            if (body.description !== undefined) v.description = String(body.description);
            if (body.metadata !== undefined) v.metadata = { ...body.metadata };
            v.updated_at = cinderNow();
            return { status: 200, body: { volume: volumeView(state, v) } };
        }),
        // POST /v3/{project_id}/volumes/{volume_id}/action (api-ref "Extend a volume size"): os-extend only.
        route("POST", String.raw`\/volumes\/([^/]+)\/action`, (req) => {
            const v = volume(req.params[0]);
            const extend = req.body?.["os-extend"];
            if (!extend) throw cinderError(400, `Invalid input received: the lab's Cinder implements os-extend only`);
            if (v.status !== "available") throw cinderError(400, `Invalid volume: Volume ${v.id} status must be 'available' to extend, but the current status is: ${v.status}.`);
            const size = Number(extend.new_size);
            if (!Number.isInteger(size) || size <= v.size) throw cinderError(400, `Invalid input received: New size for extend must be greater than current size. (current: ${v.size}, extended: ${extend.new_size}).`);
            v.size = size;
            return { status: 202 };
        }),
        // DELETE /v3/{project_id}/volumes/{volume_id} (api-ref "Delete a volume"): 202, deleting, then 404; 400 while attached.
        route("DELETE", String.raw`\/volumes\/([^/]+)`, (req) => {
            const v = volume(req.params[0]);
            if (!["available", "error"].includes(v.status) || v.attachment) throw cinderError(400, DELETE_REFUSED);
            v.status = "deleting";
            state.track(
                state.lab.deleteVolume(v.id).then(
                    () => void state.volumes.delete(v.id),
                    () => void (v.status = "error"),
                ),
            );
            return { status: 202 };
        }),
    ];
}
