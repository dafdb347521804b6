/**
 * Neutron L3: floating IPs and the router they need. What the provider calls:
 * terraform-provider-openstack v1.54.1 resource_openstack_networking_floatingip_v2.go (the pool by ?name=,
 * create, read, update, delete); shapes from the api-ref (https://docs.openstack.org/api-ref/network/v2/#floating-ips-floatingips
 * and #routers-routers), checks from neutron/db/l3_db.py and errors from neutron_lib/exceptions/l3.py.
 *
 * The lab has devstack's router1 (gateway on `public`, an interface on the lab subnet), so a floating IP can be
 * associated with a lab port; the interface can be removed and added back (router remove/add subnet).
 * A floating IP keeps the address Neutron allocated from the public subnet (172.24.4.0/24), associated or
 * not. The lab has no NAT: nothing answers at a floating address; the port's fixed IP is what answers.
 */
import { randomUUID } from "node:crypto";
import { CloudState, filterBy, FloatingIp, isoNow, neutronError, Port, Route } from "./state";

export function floatingIpRoutes(state: CloudState, port: (id: string) => Port): Route[] {
    const project = () => ({ tenant_id: state.identity.project.id, project_id: state.identity.project.id });
    const router = state.router;
    const routerView = () => ({
        id: router.id,
        name: router.name,
        description: "",
        status: "ACTIVE",
        admin_state_up: true,
        external_gateway_info: { network_id: router.gatewayNetworkId, enable_snat: true, external_fixed_ips: [{ subnet_id: state.publicSubnet.id, ip_address: router.gatewayIp }] },
        routes: [],
        distributed: false,
        ha: false,
        availability_zones: ["nova"],
        availability_zone_hints: [],
        flavor_id: null,
        tags: [],
        revision_number: 1,
        created_at: isoNow(),
        updated_at: isoNow(),
        ...project(),
    });
    const routerById = (id: string) => {
        if (id !== router.id) throw neutronError(404, "RouterNotFound", `Router ${id} could not be found`);
        return router;
    };
    const fipView = (f: FloatingIp) => ({ ...f, status: f.port_id ? "ACTIVE" : "DOWN", router_id: f.port_id ? router.id : null, port_details: null, tags: [], ...project() });
    const fip = (id: string) => {
        const f = state.floatingIps.get(id);
        if (!f) throw neutronError(404, "FloatingIPNotFound", `Floating IP ${id} could not be found`);
        return f;
    };

    /** Associates `f` with a port (l3_db.py _update_fip_assoc / _check_and_get_fip_assoc); its floating_ip_address never changes. */
    const associate = (f: FloatingIp, portId: string | null) => {
        if (!portId) {
            f.port_id = null;
            f.fixed_ip_address = null;
            return;
        }
        const p = port(portId);
        if (!p.fixed_ips.length) throw neutronError(400, "BadRequest", `Bad floatingip request: Port ${portId} does not have fixed ip.`);
        const fixed = p.fixed_ips[0];
        // l3_db.py _get_router_for_floatingip: no router from the port's subnet to the pool is 404 ExternalGatewayForFloatingIPNotFound.
        if (!router.subnetIds.includes(fixed.subnet_id) || router.gatewayNetworkId !== f.floating_network_id) {
            throw neutronError(404, "ExternalGatewayForFloatingIPNotFound", `External network ${f.floating_network_id} is not reachable from subnet ${fixed.subnet_id}.  Therefore, cannot associate Port ${portId} with a Floating IP.`);
        }
        // l3_db.py _check_and_get_fip_assoc: a fixed IP with another floating IP on the same network is 409 FloatingIPPortAlreadyAssociated.
        const other = [...state.floatingIps.values()].find((o) => o.id !== f.id && o.port_id === portId && o.fixed_ip_address === fixed.ip_address && o.floating_network_id === f.floating_network_id);
        if (other) {
            throw neutronError(409, "FloatingIPPortAlreadyAssociated", `Cannot associate floating IP ${f.floating_ip_address} (${f.id}) with port ${portId} using fixed IP ${fixed.ip_address}, as that fixed IP already has a floating IP on external network ${f.floating_network_id}.`);
        }
        f.port_id = portId;
        f.fixed_ip_address = fixed.ip_address;
    };

    /** PUT /v2.0/routers/{id}/add_router_interface and remove_router_interface (api-ref "Add/Remove interface to/from router"). */
    const interfaceChange = (add: boolean, body: Record<string, any>) => {
        if (body.port_id) throw neutronError(400, "BadRequest", "Bad router request: the lab's router takes interfaces by subnet_id only.");
        const subnetId = String(body.subnet_id ?? "");
        if (!subnetId) throw neutronError(400, "BadRequest", "Bad router request: Either subnet_id or port_id must be specified.");
        const net = state.tenantNetworks.find((n) => n.subnet.id === subnetId);
        if (!net) throw neutronError(404, "SubnetNotFound", `Subnet ${subnetId} could not be found.`);
        const reply = { id: router.id, subnet_id: subnetId, subnet_ids: [subnetId], port_id: router.interfacePorts[subnetId] ?? randomUUID(), network_id: net.id, ...project() };
        if (add) {
            if (router.subnetIds.includes(subnetId)) throw neutronError(400, "BadRequest", `Bad router request: Router already has a port on subnet ${subnetId}.`);
            router.subnetIds.push(subnetId);
            router.interfacePorts[subnetId] = reply.port_id;
            return reply;
        }
        if (!router.subnetIds.includes(subnetId)) throw neutronError(404, "RouterInterfaceNotFoundForSubnet", `Router ${router.id} has no interface on subnet ${subnetId}`);
        // l3_db.py _confirm_router_interface_not_in_use: 409 RouterInterfaceInUseByFloatingIP while a floating IP goes through it.
        if ([...state.floatingIps.values()].some((f) => f.port_id && state.ports.get(f.port_id)?.fixed_ips.some((ip) => ip.subnet_id === subnetId))) {
            throw neutronError(409, "RouterInterfaceInUseByFloatingIP", `Router interface for subnet ${subnetId} on router ${router.id} cannot be deleted, as it is required by one or more floating IPs.`);
        }
        router.subnetIds = router.subnetIds.filter((id) => id !== subnetId);
        delete router.interfacePorts[subnetId];
        return reply;
    };

    return [
        // GET /v2.0/routers and /v2.0/routers/{id} (api-ref "List routers", "Show router details").
        { method: "GET", path: /^\/network\/v2\.0\/routers$/, handler: (req) => ({ status: 200, body: { routers: filterBy([routerView()], req.query, ["id", "name", "status"]) } }) },
        { method: "GET", path: /^\/network\/v2\.0\/routers\/([^/]+)$/, handler: (req) => ({ status: 200, body: { router: (routerById(req.params[0]), routerView()) } }) },
        {
            method: "PUT",
            path: /^\/network\/v2\.0\/routers\/([^/]+)\/(add|remove)_router_interface$/,
            handler: (req) => {
                routerById(req.params[0]);
                return { status: 200, body: interfaceChange(req.params[1] === "add", req.body ?? {}) };
            },
        },
        // GET /v2.0/floatingips (api-ref "List floating IPs").
        { method: "GET", path: /^\/network\/v2\.0\/floatingips$/, handler: (req) => ({ status: 200, body: { floatingips: filterBy([...state.floatingIps.values()], req.query, ["id", "floating_ip_address", "floating_network_id", "port_id", "fixed_ip_address"]).map(fipView) } }) },
        // POST /v2.0/floatingips (api-ref "Create floating IP"): the pool must be an external network; an address from its subnet.
        {
            method: "POST",
            path: /^\/network\/v2\.0\/floatingips$/,
            handler: (req) => {
                const body = req.body?.floatingip ?? {};
                const networkId = String(body.floating_network_id ?? "");
                if (state.tenantNetwork(networkId)) throw neutronError(400, "BadRequest", `Bad floatingip request: Network ${networkId} is not a valid external network.`);
                if (networkId !== state.publicNetwork.id) throw neutronError(404, "NetworkNotFound", `Network ${networkId} could not be found.`);
                const address = state.allocateFloatingAddress();
                // neutron/ipam: an exhausted pool is 409 IpAddressGenerationFailure.
                if (!address) throw neutronError(409, "IpAddressGenerationFailure", `No more IP addresses available on network ${networkId}.`);
                const now = isoNow();
                const f: FloatingIp = { id: randomUUID(), floating_network_id: networkId, floating_ip_address: address, port_id: null, fixed_ip_address: null, description: String(body.description ?? ""), created_at: now, updated_at: now };
                if (body.port_id) associate(f, String(body.port_id));
                state.floatingIps.set(f.id, f);
                return { status: 201, body: { floatingip: fipView(f) } };
            },
        },
        // GET /v2.0/floatingips/{id} (api-ref "Show floating IP details").
        { method: "GET", path: /^\/network\/v2\.0\/floatingips\/([^/]+)$/, handler: (req) => ({ status: 200, body: { floatingip: fipView(fip(req.params[0])) } }) },
        // PUT /v2.0/floatingips/{id} (api-ref "Update floating IP"): associate or disassociate.
        {
            method: "PUT",
            path: /^\/network\/v2\.0\/floatingips\/([^/]+)$/,
            handler: (req) => {
                const f = fip(req.params[0]);
                const body = req.body?.floatingip ?? {};
                if ("port_id" in body) associate(f, body.port_id ? String(body.port_id) : null);
                if (body.description !== undefined) f.description = String(body.description);
                f.updated_at = isoNow();
                return { status: 200, body: { floatingip: fipView(f) } };
            },
        },
        // DELETE /v2.0/floatingips/{id} (api-ref "Delete floating IP"): 204.
        {
            method: "DELETE",
            path: /^\/network\/v2\.0\/floatingips\/([^/]+)$/,
            handler: (req) => {
                state.floatingIps.delete(fip(req.params[0]).id);
                return { status: 204 };
            },
        },
    ];
}
