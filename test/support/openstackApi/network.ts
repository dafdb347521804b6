/**
 * Neutron v2.0: the lab's two tenant networks and their subnets (state.ts TenantNetwork), ports that hold lab addresses, and floating
 * IPs. What the provider calls: terraform-provider-openstack v1.54.1 resource_openstack_networking_port_v2.go
 * (create, wait for ACTIVE/DOWN, read, update, delete and wait for 404), compute_instance_v2.go
 * getInstanceNetworkInfoNeutron (a port listed by ?id=, its network by ?id=&status=ACTIVE),
 * resource_openstack_networking_floatingip_v2.go (the pool by ?name=, create, read, update, delete); the
 * request and reply shapes from gophercloud v1.8.0 openstack/networking/v2/ports and the api-ref
 * (https://docs.openstack.org/api-ref/network/v2/#ports). Errors are Neutron's (neutron_lib/exceptions).
 * Floating IPs and the router they need are in floatingIps.ts.
 */
import { randomUUID } from "node:crypto";
import { ipAddressError, subnetError } from "./addresses";
import { floatingIpRoutes } from "./floatingIps";
import { CloudState, filterBy, isoNow, neutronError, Port, Route, TenantNetwork } from "./state";
import { allocateIndexIn, fixedIpsOf, inSubnet, indexOfAddress, subnetCidr } from "./tenantNetworks";

type Pair = { ip_address: string; mac_address?: string };

export function portView(state: CloudState, p: Port): Record<string, unknown> {
    const server = p.device_id ? state.servers.get(p.device_id) : undefined;
    const { indexes: _indexes, ...fields } = p;
    return {
        ...fields,
        tenant_id: state.identity.project.id,
        project_id: state.identity.project.id,
        "binding:vnic_type": "normal",
        "binding:host_id": server?.computeHost ?? "",
        "binding:vif_type": server?.computeHost ? "ovs" : "unbound",
        "binding:vif_details": {},
        "binding:profile": {},
        dns_name: "",
        dns_assignment: p.fixed_ips.map((ip) => ({ ip_address: ip.ip_address, hostname: `host-${ip.ip_address.replace(/\./g, "-")}`, fqdn: `host-${ip.ip_address.replace(/\./g, "-")}.openstacklocal.` })),
        extra_dhcp_opts: [],
        qos_policy_id: null,
        qos_network_policy_id: null,
        ip_allocation: "immediate",
        propagate_uplink_status: false,
        tags: [],
    };
}

export function networkRoutes(state: CloudState, base: () => string): Route[] {
    const project = () => ({ tenant_id: state.identity.project.id, project_id: state.identity.project.id });
    const networkView = (id: string, name: string, external: boolean, subnetId: string) => ({ id, name, status: "ACTIVE", admin_state_up: true, shared: false, "router:external": external, subnets: [subnetId], mtu: 1500, port_security_enabled: true, availability_zones: ["nova"], ...project() });
    const networks = () => [...state.tenantNetworks.map((n) => networkView(n.id, n.name, false, n.subnet.id)), networkView(state.publicNetwork.id, state.publicNetwork.name, true, state.publicSubnet.id)];
    const subnets = () => [
        ...state.tenantNetworks.map((n) => ({
            id: n.subnet.id,
            name: n.subnet.name,
            network_id: n.id,
            ip_version: 4,
            cidr: subnetCidr(state.lab, n),
            gateway_ip: `${state.lab.subnet}.${n.gateway}`,
            allocation_pools: [{ start: `${state.lab.subnet}.${n.poolStart}`, end: `${state.lab.subnet}.${n.poolEnd}` }],
            enable_dhcp: true,
            dns_nameservers: [],
            host_routes: [],
            ...project(),
        })),
        {
            id: state.publicSubnet.id,
            name: state.publicSubnet.name,
            network_id: state.publicNetwork.id,
            ip_version: 4,
            cidr: `${state.publicSubnet.prefix}.0/24`,
            gateway_ip: `${state.publicSubnet.prefix}.1`,
            allocation_pools: [{ start: `${state.publicSubnet.prefix}.2`, end: `${state.publicSubnet.prefix}.254` }],
            enable_dhcp: false,
            dns_nameservers: [],
            host_routes: [],
            ...project(),
        },
    ];
    const portNotFound = (id: string) => neutronError(404, "PortNotFound", `Port ${id} could not be found.`);
    const port = (id: string) => {
        const p = state.ports.get(id);
        if (!p) throw portNotFound(id);
        return p;
    };
    const checkGroups = (ids: unknown): string[] => {
        if (!Array.isArray(ids)) throw neutronError(400, "InvalidInput", `Invalid input for security_groups. Reason: '${String(ids)}' is not a list.`);
        for (const id of ids) if (!state.secGroups.has(String(id))) throw neutronError(404, "SecurityGroupNotFound", `Security group ${id} does not exist`);
        return ids.map(String);
    };

    /**
     * The lab indexes for the fixed_ips of a port on `net`, claimed for `owner` (neutron/db/ipam_pluggable_backend.py,
     * ipam_backend_mixin.py _get_subnet_for_fixed_ip): the address asked for when it is free (else 409
     * IpAddressAlreadyAllocated), in the subnet (else 400 InvalidIpForSubnet / InvalidIpForNetwork), on a subnet
     * of the port's network (else 400 InvalidInput), or the next free one of the pool. All or nothing.
     */
    const claimFixedIps = (owner: string, net: TenantNetwork, fixedIps: { subnet_id?: string; ip_address?: string }[] | undefined): number[] => {
        const asked = fixedIps ?? [{}];
        const claimed: number[] = [];
        try {
            for (const ip of asked) {
                if (ip.subnet_id !== undefined && ip.subnet_id !== net.subnet.id) {
                    const other = state.tenantNetworks.find((n) => n.subnet.id === ip.subnet_id)?.id ?? (ip.subnet_id === state.publicSubnet.id ? state.publicNetwork.id : undefined);
                    if (!other) throw neutronError(404, "SubnetNotFound", `Subnet ${ip.subnet_id} could not be found.`);
                    // _get_subnet_for_fixed_ip names the subnet's own network (subnet_obj.network_id).
                    throw neutronError(400, "InvalidInput", `Invalid input for operation: Failed to create port on network ${other}, because fixed_ips included invalid subnet ${ip.subnet_id}.`);
                }
                if (ip.ip_address === undefined) {
                    claimed.push(allocateIndexIn(state.lab, net, owner));
                    continue;
                }
                const index = indexOfAddress(state.lab, ip.ip_address, net);
                if (index === undefined) {
                    if (ip.subnet_id === undefined && !inSubnet(state.lab, ip.ip_address, net)) throw neutronError(400, "InvalidIpForNetwork", `IP address ${ip.ip_address} is not a valid IP for any of the subnets on the specified network.`);
                    throw neutronError(400, "InvalidIpForSubnet", `IP address ${ip.ip_address} is not a valid IP for the specified subnet.`);
                }
                if (claimed.includes(index) || !state.lab.claimIndex(index, owner)) throw neutronError(409, "IpAddressAlreadyAllocated", `IP address ${ip.ip_address} already allocated in subnet ${net.subnet.id}`);
                claimed.push(index);
            }
            return claimed;
        } catch (e) {
            for (const index of claimed) state.lab.releaseIndex(index);
            throw e;
        }
    };
    /** allowed_address_pairs as neutron_lib/api/validators/allowedaddresspairs.py _validate_allowed_address_pairs checks them. */
    const pairsOf = (raw: unknown): Pair[] => {
        if (raw === undefined || raw === null) return [];
        if (!Array.isArray(raw)) throw neutronError(400, "HTTPBadRequest", "Allowed address pairs must be a list.");
        const seen = new Set<string>();
        return raw.map((pair: Pair) => {
            if (!pair || typeof pair !== "object" || !("ip_address" in pair)) throw neutronError(400, "AllowedAddressPairsMissingIP", "AllowedAddressPair must contain ip_address");
            // neutron_lib allowedaddresspairs.py: the same (mac_address, ip_address) twice is DuplicateAddressPairInRequest (400).
            const key = JSON.stringify([pair.mac_address ?? null, pair.ip_address]);
            if (seen.has(key)) throw neutronError(400, "DuplicateAddressPairInRequest", `Request contains duplicate address pair: mac_address ${pair.mac_address ?? "None"} ip_address ${pair.ip_address}.`);
            seen.add(key);
            // neutron_lib allowedaddresspairs.py: validate_subnet for a CIDR, validate_ip_address otherwise; webob HTTPBadRequest (400).
            const invalid = String(pair.ip_address).includes("/") ? subnetError(pair.ip_address) : ipAddressError(pair.ip_address);
            if (invalid) throw neutronError(400, "HTTPBadRequest", invalid);
            return { ip_address: pair.ip_address, ...(pair.mac_address === undefined ? {} : { mac_address: pair.mac_address }) };
        });
    };
    const withMacs = (pairs: Pair[], mac: string) => pairs.map((pair) => ({ ip_address: pair.ip_address, mac_address: pair.mac_address ?? mac }));
    /** neutron/plugins/ml2/plugin.py _portsec_ext_port_create_processing and _portsec_ext_port_update_processing. */
    const noPairsWithoutPortSecurity = () => neutronError(409, "AddressPairAndPortSecurityRequired", "Port Security must be enabled in order to have allowed address pairs on a port.");
    const noGroupsWithoutPortSecurity = () => neutronError(400, "PortSecurityAndIPRequiredForSecurityGroups", "Port security must be enabled and port must have an IP address in order to use security groups.");

    /** POST /v2.0/ports (api-ref network v2 "Create port"). */
    const createPort = (body: Record<string, any>): Port => {
        const networkId = String(body.network_id ?? "");
        if (!networkId) throw neutronError(400, "HTTPBadRequest", "Failed to parse request. Required attribute 'network_id' not specified");
        if (!networks().some((n) => n.id === networkId)) throw neutronError(404, "NetworkNotFound", `Network ${networkId} could not be found.`);
        const net = state.tenantNetwork(networkId);
        const pairs = pairsOf(body.allowed_address_pairs);
        const portSecurity = body.port_security_enabled === undefined || body.port_security_enabled === null || Boolean(body.port_security_enabled);
        // ml2 plugin.py _portsec_ext_port_create_processing: pairs without port security 409, security groups 400.
        if (!portSecurity && pairs.length) throw noPairsWithoutPortSecurity();
        if (!portSecurity && Array.isArray(body.security_groups) && body.security_groups.length) throw noGroupsWithoutPortSecurity();
        const groups = body.security_groups === undefined || body.security_groups === null ? (portSecurity ? [state.defaultSecGroupId] : []) : checkGroups(body.security_groups);
        const id = randomUUID();
        const indexes = net ? claimFixedIps(`port:${id}`, net, body.fixed_ips) : [];
        const mac = indexes.length ? state.macOf(indexes[0]) : "fa:16:3e:00:00:00";
        if (body.mac_address !== undefined && body.mac_address !== mac) {
            for (const index of indexes) state.lab.releaseIndex(index);
            throw neutronError(400, "InvalidInput", `Invalid input for operation: the lab gives a port the MAC of its first address (${mac}).`);
        }
        const now = isoNow();
        const p: Port = {
            id,
            name: String(body.name ?? ""),
            description: String(body.description ?? ""),
            network_id: networkId,
            mac_address: mac,
            admin_state_up: body.admin_state_up ?? true,
            status: "DOWN",
            device_id: String(body.device_id ?? ""),
            device_owner: String(body.device_owner ?? ""),
            fixed_ips: net ? fixedIpsOf(state.lab, net, indexes) : [],
            allowed_address_pairs: withMacs(pairs, mac),
            security_groups: groups,
            port_security_enabled: portSecurity,
            created_at: now,
            updated_at: now,
            revision_number: 1,
            indexes,
        };
        state.ports.set(id, p);
        return p;
    };

    /** PUT /v2.0/ports/{id} (api-ref network v2 "Update port"). */
    const updatePort = (p: Port, body: Record<string, any>): void => {
        const pairs = body.allowed_address_pairs === undefined ? undefined : pairsOf(body.allowed_address_pairs);
        const groups = body.security_groups === undefined ? undefined : checkGroups(body.security_groups ?? []);
        const portSecurity = body.port_security_enabled === undefined ? p.port_security_enabled : Boolean(body.port_security_enabled);
        if (!portSecurity) {
            // ml2 plugin.py _portsec_ext_port_update_processing: pairs (asked or kept) 409, groups asked 400, groups kept 409.
            if ((pairs ?? p.allowed_address_pairs).length) throw noPairsWithoutPortSecurity();
            if (groups?.length) throw noGroupsWithoutPortSecurity();
            if (groups === undefined && p.security_groups.length) throw neutronError(409, "PortSecurityPortHasSecurityGroup", "Port has security group associated. Cannot disable port security or IP address until security group is removed.");
        }
        if (body.fixed_ips !== undefined) {
            if (p.device_id) throw neutronError(409, "PortInUse", `Unable to complete operation on port ${p.id}: the lab cannot move a running server's address; make a new port instead.`);
            const net = state.tenantNetwork(p.network_id);
            if (!net) throw neutronError(400, "InvalidInput", `Invalid input for operation: the lab gives addresses on its tenant networks only, not on ${p.network_id}.`);
            const indexes = claimFixedIps(`port:${p.id}`, net, body.fixed_ips);
            for (const old of p.indexes) if (!indexes.includes(old)) state.lab.releaseIndex(old);
            p.indexes = indexes;
            p.fixed_ips = fixedIpsOf(state.lab, net, indexes);
        }
        if (groups !== undefined) p.security_groups = groups;
        if (pairs !== undefined) p.allowed_address_pairs = withMacs(pairs, p.mac_address);
        for (const key of ["name", "description", "device_id", "device_owner"] as const) if (body[key] !== undefined) p[key] = String(body[key]);
        if (body.admin_state_up !== undefined) p.admin_state_up = Boolean(body.admin_state_up);
        p.port_security_enabled = portSecurity;
        p.updated_at = isoNow();
        p.revision_number++;
    };

    const versions = () => ({ versions: [{ id: "v2.0", status: "CURRENT", links: [{ rel: "self", href: `${base()}/network/v2.0/` }] }] });
    /** The API extensions this lab's Neutron implements (api-ref network v2 "Extensions"); clients check them before using a field. */
    const extensions = [
        ["security-group", "security-group"],
        ["port-security", "Port Security"],
        ["allowed-address-pairs", "Allowed Address Pairs"],
        ["binding", "Port Binding"],
        ["external-net", "Neutron external network"],
        ["router", "Neutron L3 Router"],
        ["project-id", "project_id field enabled"],
        ["standard-attr-description", "standard-attr-description"],
        ["standard-attr-timestamp", "Resource timestamps"],
        ["standard-attr-revisions", "Resource revision numbers"],
    ].map(([alias, name]) => ({ alias, name, description: name, updated: "2013-01-01T10:00:00-00:00", links: [] }));

    return [
        // GET /v2.0/extensions and /v2.0/extensions/{alias} (api-ref network v2 "List extensions", "Show extension details").
        { method: "GET", path: /^\/network\/v2\.0\/extensions$/, handler: () => ({ status: 200, body: { extensions } }) },
        {
            method: "GET",
            path: /^\/network\/v2\.0\/extensions\/([^/]+)$/,
            handler: (req) => {
                const found = extensions.find((e) => e.alias === req.params[0]);
                if (!found) throw neutronError(404, "ExtensionNotFound", `Extension with alias ${req.params[0]} does not exist`);
                return { status: 200, body: { extension: found } };
            },
        },
        // GET / (api-ref network v2 "List API versions").
        { method: "GET", path: /^\/network\/?$/, open: true, handler: () => ({ status: 200, body: versions() }) },
        { method: "GET", path: /^\/network\/v2\.0\/?$/, open: true, handler: () => ({ status: 200, body: { resources: ["network", "subnet", "port", "security-group", "security-group-rule", "floatingip", "router"].map((name) => ({ name, collection: `${name}s`, links: [] })) } }) },
        // GET /v2.0/networks (api-ref "List networks"): ?id=, ?name=, ?status=... as getInstanceNetworkInfoNeutron and networkingNetworkV2ID send.
        { method: "GET", path: /^\/network\/v2\.0\/networks$/, handler: (req) => ({ status: 200, body: { networks: filterBy(networks(), req.query, ["id", "name", "status", "shared", "router:external", "admin_state_up", "tenant_id", "project_id"]) } }) },
        // GET /v2.0/networks/{id} (api-ref "Show network details").
        {
            method: "GET",
            path: /^\/network\/v2\.0\/networks\/([^/]+)$/,
            handler: (req) => {
                const n = networks().find((x) => x.id === req.params[0]);
                if (!n) throw neutronError(404, "NetworkNotFound", `Network ${req.params[0]} could not be found.`);
                return { status: 200, body: { network: n } };
            },
        },
        // GET /v2.0/subnets and /v2.0/subnets/{id} (api-ref "List subnets", "Show subnet details").
        { method: "GET", path: /^\/network\/v2\.0\/subnets$/, handler: (req) => ({ status: 200, body: { subnets: filterBy(subnets(), req.query, ["id", "name", "network_id", "cidr", "ip_version"]) } }) },
        {
            method: "GET",
            path: /^\/network\/v2\.0\/subnets\/([^/]+)$/,
            handler: (req) => {
                const s = subnets().find((x) => x.id === req.params[0]);
                if (!s) throw neutronError(404, "SubnetNotFound", `Subnet ${req.params[0]} could not be found.`);
                return { status: 200, body: { subnet: s } };
            },
        },
        // POST /v2.0/ports (api-ref "Create port"): 201; the provider then polls GET until ACTIVE or DOWN.
        { method: "POST", path: /^\/network\/v2\.0\/ports$/, handler: (req) => ({ status: 201, body: { port: portView(state, createPort(req.body?.port ?? {})) } }) },
        // GET /v2.0/ports (api-ref "List ports"): ?id= (the instance's network lookup), ?device_id=, ?fixed_ips=ip_address=...
        {
            method: "GET",
            path: /^\/network\/v2\.0\/ports$/,
            handler: (req) => {
                let ports = filterBy([...state.ports.values()], req.query, ["id", "name", "network_id", "device_id", "device_owner", "mac_address", "status", "admin_state_up"]);
                for (const wanted of req.query.getAll("fixed_ips")) {
                    const [key, value] = wanted.split("=", 2);
                    ports = ports.filter((p) => p.fixed_ips.some((ip) => (ip as Record<string, string>)[key] === value));
                }
                return { status: 200, body: { ports: ports.map((p) => portView(state, p)) } };
            },
        },
        // GET /v2.0/ports/{id} (api-ref "Show port details"); 404 PortNotFound ends the provider's delete wait.
        { method: "GET", path: /^\/network\/v2\.0\/ports\/([^/]+)$/, handler: (req) => ({ status: 200, body: { port: portView(state, port(req.params[0])) } }) },
        // PUT /v2.0/ports/{id} (api-ref "Update port").
        {
            method: "PUT",
            path: /^\/network\/v2\.0\/ports\/([^/]+)$/,
            handler: (req) => {
                const p = port(req.params[0]);
                updatePort(p, req.body?.port ?? {});
                return { status: 200, body: { port: portView(state, p) } };
            },
        },
        // DELETE /v2.0/ports/{id} (api-ref "Delete port"): 204; its addresses go back to the lab, unless a server still runs on them.
        {
            method: "DELETE",
            path: /^\/network\/v2\.0\/ports\/([^/]+)$/,
            handler: (req) => {
                const p = port(req.params[0]);
                state.ports.delete(p.id);
                const server = p.device_id ? state.servers.get(p.device_id) : undefined;
                if (server) server.ports = server.ports.filter((id) => id !== p.id);
                if (server?.hostName && server.status !== "DELETED") state.orphanIndexes.set(server.id, [...(state.orphanIndexes.get(server.id) ?? []), ...p.indexes]);
                else for (const index of p.indexes) state.lab.releaseIndex(index);
                // neutron/db/l3_db.py disassociate_floatingips: a deleted port's floating IPs stay, unassociated.
                for (const f of state.floatingIps.values()) if (f.port_id === p.id) Object.assign(f, { port_id: null, fixed_ip_address: null });
                return { status: 204 };
            },
        },
        ...floatingIpRoutes(state, port),
    ];
}
