import * as openstack from "@pulumi/openstack";
import * as pulumi from "@pulumi/pulumi";
import { parseCidr } from "../config/net";
import { SecurityRuleSpec } from "../config/spec";

/** Who may use a port: the configured outside sources, or members of the same security group. */
type Source = "allowed" | "members";

export interface RuleTemplate {
    id: string;
    protocol: string;
    ports?: [number, number];
    from: Source;
}

/**
 * Node rules. The user guide opens 22, 6443, 16443, 2379-2380, 10250-10255, 30000-32767 and ICMP; etcd and
 * kubelet are opened to the cluster's own nodes only, the API ports to the outside sources and to the
 * nodes, and Calico's BGP/IP-in-IP/VXLAN/Typha are added so pod networking works between nodes.
 */
export function nodeRules(args: { ha: boolean; apiServerPort: number; haproxyPort: number }): RuleTemplate[] {
    return [
        { id: "ssh", protocol: "tcp", ports: [22, 22], from: "allowed" },
        { id: "api", protocol: "tcp", ports: [args.apiServerPort, args.apiServerPort], from: "allowed" },
        // HA: the nodes themselves reach the API through the VIP's HAProxy port, whatever the outside sources are.
        ...(args.ha
            ? ([
                  { id: "api-haproxy", protocol: "tcp", ports: [args.haproxyPort, args.haproxyPort], from: "allowed" },
                  { id: "api-haproxy-members", protocol: "tcp", ports: [args.haproxyPort, args.haproxyPort], from: "members" },
              ] as RuleTemplate[])
            : []),
        { id: "nodeport-tcp", protocol: "tcp", ports: [30000, 32767], from: "allowed" },
        { id: "nodeport-udp", protocol: "udp", ports: [30000, 32767], from: "allowed" },
        { id: "icmp", protocol: "icmp", from: "allowed" },
        { id: "etcd", protocol: "tcp", ports: [2379, 2380], from: "members" },
        { id: "kubelet", protocol: "tcp", ports: [10250, 10255], from: "members" },
        { id: "api-members", protocol: "tcp", ports: [args.apiServerPort, args.apiServerPort], from: "members" },
        { id: "calico-bgp", protocol: "tcp", ports: [179, 179], from: "members" },
        { id: "calico-ipip", protocol: "4", from: "members" },
        { id: "calico-vxlan", protocol: "udp", ports: [4789, 4789], from: "members" },
        { id: "calico-typha", protocol: "tcp", ports: [5473, 5473], from: "members" },
    ];
}

/** VRRP between the masters that share the VIP (keepalived). */
export const VRRP_RULES: RuleTemplate[] = [{ id: "vrrp", protocol: "112", from: "members" }];

/** NFS from the cluster nodes to the storage server. */
export const NFS_RULES: RuleTemplate[] = [
    { id: "nfs-tcp", protocol: "tcp", ports: [2049, 2049], from: "members" },
    { id: "nfs-udp", protocol: "udp", ports: [2049, 2049], from: "members" },
    { id: "rpcbind-tcp", protocol: "tcp", ports: [111, 111], from: "members" },
    { id: "rpcbind-udp", protocol: "udp", ports: [111, 111], from: "members" },
];

export function sshAndPortRules(ports: number[]): RuleTemplate[] {
    return [
        { id: "ssh", protocol: "tcp", ports: [22, 22], from: "allowed" },
        ...ports.map((p): RuleTemplate => ({ id: `tcp-${p}`, protocol: "tcp", ports: [p, p], from: "allowed" })),
        { id: "icmp", protocol: "icmp", from: "allowed" },
    ];
}

export interface SecurityGroupArgs {
    /** Neutron name of the group. */
    groupName: string;
    description: string;
    /** Rules to create. */
    rules: RuleTemplate[];
    /** Sources of the `allowed` rules (CIDRs). */
    allowedCidrs: string[];
    /** Group whose members the `members` rules admit; default: this group itself. */
    membersGroupId?: pulumi.Input<string>;
    /** Rules from stack config, added as they are. */
    extraRules?: SecurityRuleSpec[];
}

/** A Neutron security group and its ingress rules. */
export class SecurityGroup extends pulumi.ComponentResource {
    readonly group: openstack.networking.SecGroup;
    readonly rules: openstack.networking.SecGroupRule[];

    constructor(name: string, args: SecurityGroupArgs, opts?: pulumi.ComponentResourceOptions) {
        super("k8s-vnf:openstack:SecurityGroup", name, {}, opts);
        this.group = new openstack.networking.SecGroup(`${name}-group`, { name: args.groupName, description: args.description }, { parent: this });
        const membersGroupId = args.membersGroupId ?? this.group.id;
        // Neutron deletes a group's rules with it (api-ref "Delete security group"), while the provider deletes
        // rules one at a time per group, each waiting 5 s (terraform-provider-openstack v1.54.1
        // resource_openstack_networking_secgroup_rule_v2.go: MutexKV on the group, `Delay: 5 * time.Second`):
        // a dozen rules added a minute to every destroy. A rule removed on its own is still deleted.
        const rule = (id: string, r: Omit<openstack.networking.SecGroupRuleArgs, "securityGroupId" | "direction">) =>
            new openstack.networking.SecGroupRule(`${name}-${id}`, { ...r, direction: "ingress", securityGroupId: this.group.id }, { parent: this, deletedWith: this.group });

        this.rules = [];
        for (const t of args.rules) {
            const base = { protocol: t.protocol, portRangeMin: t.ports?.[0], portRangeMax: t.ports?.[1], description: t.id };
            if (t.from === "members") {
                this.rules.push(rule(t.id, { ...base, ethertype: "IPv4", remoteGroupId: membersGroupId }));
            } else {
                args.allowedCidrs.forEach((cidr, i) => {
                    const suffix = args.allowedCidrs.length > 1 ? `-${i}` : "";
                    this.rules.push(rule(`${t.id}${suffix}`, { ...base, ethertype: ethertypeOf(cidr), remoteIpPrefix: cidr }));
                });
            }
        }
        (args.extraRules ?? []).forEach((r, i) => {
            this.rules.push(
                rule(`extra-${i}`, {
                    protocol: String(r.protocol),
                    portRangeMin: r.portRangeMin ?? r.portRangeMax,
                    portRangeMax: r.portRangeMax ?? r.portRangeMin,
                    remoteIpPrefix: r.remoteIpPrefix,
                    ethertype: ethertypeOf(r.remoteIpPrefix),
                    description: r.description,
                }),
            );
        });
        this.registerOutputs({ groupId: this.group.id });
    }
}

function ethertypeOf(cidr: string): "IPv4" | "IPv6" {
    return parseCidr(cidr)?.family === 6 ? "IPv6" : "IPv4";
}
