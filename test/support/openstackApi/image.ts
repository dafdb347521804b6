/**
 * Glance v2, read-only: the one lab image, listed (with Glance's filters, which is how the provider turns
 * `image_name` into an id: gophercloud/utils openstack/imageservice/v2/images/utils.go IDFromName, a list with
 * ?name=) and shown (the provider's read: resource_openstack_compute_instance_v2.go setImageInformation).
 */
import { CloudState, filterBy, glanceError, Route } from "./state";

export function imageRoutes(state: CloudState, base: () => string): Route[] {
    const image = () => ({
        id: state.image.id,
        name: state.image.name,
        status: "active",
        visibility: "public",
        protected: false,
        os_hidden: false,
        disk_format: "qcow2",
        container_format: "bare",
        size: 354_025_472,
        virtual_size: 2_147_483_648,
        min_disk: 0,
        min_ram: 0,
        checksum: "f0b4e1a0c3f4d4d37a1ecd44de1d3a4b",
        owner: state.identity.project.id,
        tags: [],
        created_at: state.image.created,
        updated_at: state.image.created,
        file: `/v2/images/${state.image.id}/file`,
        self: `/v2/images/${state.image.id}`,
        schema: "/v2/schemas/image",
    });
    const versions = () => ({
        versions: ["2.16", "2.15"].map((v, i) => ({ id: `v${v}`, status: i === 0 ? "CURRENT" : "SUPPORTED", links: [{ rel: "self", href: `${base()}/image/v2/` }] })),
    });
    return [
        // GET / (api-ref image v2 "List API versions"): 300 with the versions.
        { method: "GET", path: /^\/image\/?$/, open: true, handler: () => ({ status: 300, body: versions() }) },
        { method: "GET", path: /^\/image\/versions\/?$/, open: true, handler: () => ({ status: 200, body: versions() }) },
        // GET /v2/images (api-ref image v2 "List images"): filters name, id, status, visibility...; no `next` = last page.
        {
            method: "GET",
            path: /^\/image\/v2\/images$/,
            handler: (req) => {
                const images = filterBy([image()], req.query, ["name", "id", "status", "visibility", "owner", "disk_format", "container_format"]);
                return { status: 200, body: { images, schema: "/v2/schemas/images", first: "/v2/images" } };
            },
        },
        // GET /v2/images/{id} (api-ref image v2 "Show image"): 404 for any other id (a name too).
        {
            method: "GET",
            path: /^\/image\/v2\/images\/([^/]+)$/,
            handler: (req) => {
                if (req.params[0] !== state.image.id) throw glanceError(404, `No image found with ID ${req.params[0]}`);
                return { status: 200, body: image() };
            },
        },
    ];
}
