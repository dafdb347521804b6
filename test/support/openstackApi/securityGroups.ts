/**
 * Neutron security groups and rules, kept in memory (the lab has no packet filter: a rule is a record).
 * What the provider calls: terraform-provider-openstack v1.54.1 resource_openstack_networking_secgroup_v2.go
 * (create, optional delete of the default rules, read, update, delete retried while 409 with
 * networking_secgroup_v2.go) and resource_openstack_networking_secgroup_rule_v2.go (create, read, delete, wait
 * for 404); shapes from the api-ref (https://docs.openstack.org/api-ref/network/v2/#security-groups-security-groups
 * and #security-group-rules-security-group-rules); errors from neutron/extensions/securitygroup.py.
 */
import { randomUUID } from "node:crypto";
import { parseCidr } from "./addresses";
import { CloudState, filterBy, isoNow, neutronError, Route, SecurityGroup, SecurityGroupRule } from "./state";

/** Protocols Neutron accepts by name (neutron_lib/constants.py IP_PROTOCOL_MAP), or a number 0-255. */
/** Protocols only IPv6 carries (securitygroups_db.py _validate_ethertype_and_protocol), by name and number. */
const IPV6_ONLY = ["ipv6-encap", "ipv6-frag", "ipv6-icmp", "icmpv6", "ipv6-nonxt", "ipv6-opts", "ipv6-route", "41", "44", "58", "59", "60", "43"];
/** Protocols whose rules take ports (neutron/common/constants.py SG_PORT_PROTO_NAMES / _NUMS). */
const PORT_PROTOCOLS = ["tcp", "udp", "sctp", "dccp", "udplite", "6", "17", "132", "33", "136"];
const PROTOCOLS = ["ah", "dccp", "egp", "esp", "gre", "hopopt", "icmp", "igmp", "ip", "ipip", "ipv6-encap", "ipv6-frag", "ipv6-icmp", "icmpv6", "ipv6-nonxt", "ipv6-opts", "ipv6-route", "ospf", "pgm", "rsvp", "sctp", "tcp", "udp", "udplite", "vrrp"];

export function securityGroupRoutes(state: CloudState): Route[] {
    const project = () => ({ tenant_id: state.identity.project.id, project_id: state.identity.project.id });
    const ruleView = (r: SecurityGroupRule) => ({ ...r, revision_number: 0, tags: [], ...project() });
    const groupView = (g: SecurityGroup) => ({
        ...g,
        stateful: true,
        shared: false,
        tags: [],
        security_group_rules: [...state.rules.values()].filter((r) => r.security_group_id === g.id).map(ruleView),
        ...project(),
    });
    const group = (id: string) => {
        const g = state.secGroups.get(id);
        if (!g) throw neutronError(404, "SecurityGroupNotFound", `Security group ${id} does not exist`);
        return g;
    };
    const rule = (id: string) => {
        const r = state.rules.get(id);
        if (!r) throw neutronError(404, "SecurityGroupRuleNotFound", `Security group rule ${id} does not exist`);
        return r;
    };

    /** POST /v2.0/security-group-rules: Neutron's checks (neutron/db/securitygroups_db.py _validate_security_group_rule). */
    const createRule = (body: Record<string, any>): SecurityGroupRule => {
        const groupId = String(body.security_group_id ?? "");
        group(groupId);
        const direction = body.direction;
        if (direction !== "ingress" && direction !== "egress") throw neutronError(400, "InvalidInput", `Invalid input for direction. Reason: ${JSON.stringify(direction ?? null)} is not in ['ingress', 'egress'].`);
        const ethertype = body.ethertype ?? "IPv4";
        if (ethertype !== "IPv4" && ethertype !== "IPv6") throw neutronError(400, "SecurityGroupRuleInvalidEtherType", `Security group rule for ethertype '${ethertype}' not supported. Allowed values are ['IPv4', 'IPv6'].`);
        const protocol: string | null = body.protocol === undefined || body.protocol === null ? null : String(body.protocol).toLowerCase();
        if (protocol !== null && !PROTOCOLS.includes(protocol) && !(/^\d+$/.test(protocol) && Number(protocol) <= 255)) {
            throw neutronError(400, "SecurityGroupRuleInvalidProtocol", `Security group rule protocol ${protocol} not supported. Only protocol values [None, ${PROTOCOLS.join(", ")}] and integer representations [0 to 255] are supported.`);
        }
        // neutron/extensions/securitygroup.py convert_validate_port_value: an integer 0-65535, else 400 SecurityGroupInvalidPortValue.
        const portValue = (value: unknown): number | null => {
            if (value === undefined || value === null) return null;
            const n = Number(value);
            if (!/^\d+$/.test(String(value).trim()) || n > 65535) throw neutronError(400, "SecurityGroupInvalidPortValue", `Invalid value for port ${value}.`);
            return n;
        };
        const min = portValue(body.port_range_min);
        const max = portValue(body.port_range_max);
        if ((min !== null || max !== null) && protocol === null) throw neutronError(400, "SecurityGroupProtocolRequiredWithPorts", "Must also specify protocol if port range is given.");
        // securitygroups_db.py _validate_ethertype_and_protocol: an IPv6-only protocol with IPv4 is 400 SecurityGroupEthertypeConflictWithProtocol.
        if (protocol !== null && IPV6_ONLY.includes(protocol) && ethertype === "IPv4") throw neutronError(400, "SecurityGroupEthertypeConflictWithProtocol", `Invalid ethertype ${ethertype} for protocol ${protocol}.`);
        if (PORT_PROTOCOLS.includes(protocol ?? "")) {
            // securitygroups_db.py _validate_port_range: port 0 is 400 SecurityGroupInvalidPortValue.
            if (min === 0 || max === 0) throw neutronError(400, "SecurityGroupInvalidPortValue", "Invalid value for port 0.");
            if (min !== null && max !== null && min > max) throw neutronError(400, "SecurityGroupInvalidPortRange", "For TCP/UDP protocols, port_range_min must be <= port_range_max");
        } else if (["icmp", "1", "ipv6-icmp", "icmpv6", "58"].includes(protocol ?? "")) {
            // securitygroups_db.py _validate_port_range: ICMP type and code 0-255, else 400 SecurityGroupInvalidIcmpValue.
            for (const [value, attr, field] of [[min, "port_range_min", "type"], [max, "port_range_max", "code"]] as const) {
                if (value !== null && value > 255) throw neutronError(400, "SecurityGroupInvalidIcmpValue", `Invalid value for ICMP ${field} (${attr}) ${value}. It must be 0 to 255.`);
            }
        }
        if (body.remote_ip_prefix && body.remote_group_id) throw neutronError(400, "SecurityGroupRemoteGroupAndRemoteIpPrefix", "Only remote_ip_prefix or remote_group_id may be provided.");
        let prefix: string | null = null;
        if (body.remote_ip_prefix) {
            const cidr = parseCidr(String(body.remote_ip_prefix));
            // neutron/extensions/securitygroup.py convert_ip_prefix_to_cidr: not an address or CIDR is 400 InvalidCIDR.
            if (!cidr) throw neutronError(400, "InvalidCIDR", `Invalid CIDR ${body.remote_ip_prefix} given as IP prefix.`);
            // securitygroups_db.py _validate_ip_prefix: a prefix of the other IP version is 400 SecurityGroupRuleParameterConflict.
            if (ethertype !== `IPv${cidr.version}`) throw neutronError(400, "SecurityGroupRuleParameterConflict", `Conflicting value ethertype ${ethertype} for CIDR ${body.remote_ip_prefix}`);
            prefix = cidr.text;
        }
        if (body.remote_group_id) group(String(body.remote_group_id));
        const now = isoNow();
        const r: SecurityGroupRule = {
            id: randomUUID(),
            security_group_id: groupId,
            direction,
            ethertype,
            protocol,
            port_range_min: min,
            port_range_max: max,
            remote_ip_prefix: prefix,
            remote_group_id: body.remote_group_id || null,
            description: String(body.description ?? ""),
            created_at: now,
            updated_at: now,
        };
        // securitygroups_db.py _check_for_duplicate_rules: 0.0.0.0/0 and ::/0 are the same rule as no prefix.
        const anyPrefix = (value: string | null) => (value === "0.0.0.0/0" || value === "::/0" ? null : value);
        const same = (a: SecurityGroupRule) => anyPrefix(a.remote_ip_prefix) === anyPrefix(r.remote_ip_prefix) && (["security_group_id", "direction", "ethertype", "protocol", "port_range_min", "port_range_max", "remote_group_id"] as const).every((k) => a[k] === r[k]);
        const existing = [...state.rules.values()].find(same);
        if (existing) throw neutronError(409, "SecurityGroupRuleExists", `Security group rule already exists. Rule id is ${existing.id}.`);
        state.rules.set(r.id, r);
        return r;
    };

    return [
        // GET /v2.0/security-groups (api-ref "List security groups").
        { method: "GET", path: /^\/network\/v2\.0\/security-groups$/, handler: (req) => ({ status: 200, body: { security_groups: filterBy([...state.secGroups.values()], req.query, ["id", "name", "description"]).map(groupView) } }) },
        // POST /v2.0/security-groups (api-ref "Create security group"): 201, with the two default egress rules.
        {
            method: "POST",
            path: /^\/network\/v2\.0\/security-groups$/,
            handler: (req) => {
                const body = req.body?.security_group ?? {};
                if (body.name === "default") throw neutronError(409, "SecurityGroupDefaultAlreadyExists", "Default security group already exists.");
                const now = isoNow();
                const g: SecurityGroup = { id: randomUUID(), name: String(body.name ?? ""), description: String(body.description ?? ""), created_at: now, updated_at: now, revision_number: 1 };
                state.secGroups.set(g.id, g);
                state.addDefaultEgressRules(g.id);
                return { status: 201, body: { security_group: groupView(g) } };
            },
        },
        // GET /v2.0/security-groups/{id} (api-ref "Show security group").
        { method: "GET", path: /^\/network\/v2\.0\/security-groups\/([^/]+)$/, handler: (req) => ({ status: 200, body: { security_group: groupView(group(req.params[0])) } }) },
        // PUT /v2.0/security-groups/{id} (api-ref "Update security group").
        {
            method: "PUT",
            path: /^\/network\/v2\.0\/security-groups\/([^/]+)$/,
            handler: (req) => {
                const g = group(req.params[0]);
                const body = req.body?.security_group ?? {};
                if (body.name !== undefined) g.name = String(body.name);
                if (body.description !== undefined) g.description = String(body.description);
                g.updated_at = isoNow();
                g.revision_number++;
                return { status: 200, body: { security_group: groupView(g) } };
            },
        },
        // DELETE /v2.0/security-groups/{id} (api-ref "Delete security group"): 409 while a port uses it.
        {
            method: "DELETE",
            path: /^\/network\/v2\.0\/security-groups\/([^/]+)$/,
            handler: (req) => {
                const g = group(req.params[0]);
                if (g.id === state.defaultSecGroupId) throw neutronError(409, "SecurityGroupCannotRemoveDefault", "Insufficient rights for removing default security group.");
                if ([...state.ports.values()].some((p) => p.security_groups.includes(g.id))) throw neutronError(409, "SecurityGroupInUse", `Security Group ${g.id} in use.`);
                for (const r of [...state.rules.values()]) if (r.security_group_id === g.id) state.rules.delete(r.id);
                state.secGroups.delete(g.id);
                return { status: 204 };
            },
        },
        // GET /v2.0/security-group-rules (api-ref "List security group rules").
        { method: "GET", path: /^\/network\/v2\.0\/security-group-rules$/, handler: (req) => ({ status: 200, body: { security_group_rules: filterBy([...state.rules.values()], req.query, ["id", "security_group_id", "direction", "ethertype", "protocol", "remote_group_id", "remote_ip_prefix"]).map(ruleView) } }) },
        // POST /v2.0/security-group-rules (api-ref "Create security group rule"): 201; 409 for a duplicate.
        { method: "POST", path: /^\/network\/v2\.0\/security-group-rules$/, handler: (req) => ({ status: 201, body: { security_group_rule: ruleView(createRule(req.body?.security_group_rule ?? {})) } }) },
        // GET /v2.0/security-group-rules/{id} (api-ref "Show security group rule").
        { method: "GET", path: /^\/network\/v2\.0\/security-group-rules\/([^/]+)$/, handler: (req) => ({ status: 200, body: { security_group_rule: ruleView(rule(req.params[0])) } }) },
        // DELETE /v2.0/security-group-rules/{id} (api-ref "Delete security group rule"): 204.
        {
            method: "DELETE",
            path: /^\/network\/v2\.0\/security-group-rules\/([^/]+)$/,
            handler: (req) => {
                state.rules.delete(rule(req.params[0]).id);
                return { status: 204 };
            },
        },
    ];
}
