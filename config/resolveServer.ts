/** Where one VM, or each VM of a group, goes and how it is reached: its placement, login and security group resolved. */
import { Checker } from "./checker";
import { Placement, StackConfig } from "./schema";
import { ClusterSpec, ServerSpec } from "./spec";

/** A node that no one can log in to: how to give it a password, or the other way. */
export const noLogin = (field: string) => `no way to log in: set a password as a secret (pulumi config set --secret --path '${field}') or \`ssh.privateKey\``;

/**
 * Resolves where one VM (or each VM of a group) goes. `single` VMs take their fixed IP from `fixedIps[0]`;
 * node groups keep theirs per index.
 */
export function resolveServer(config: StackConfig, field: string, p: Placement, c: Checker, sshKey: boolean, single = true): ServerSpec {
    const image = p.image ?? config.image;
    const flavor = p.flavor ?? config.flavor;
    const networkId = p.networkId ?? config.network?.networkId;
    const subnetId = p.subnetId ?? (p.networkId ? undefined : config.network?.subnetId);
    if (!image) c.fail(`${field}.image`, "no image: set it here or the top-level `image`");
    if (!flavor) c.fail(`${field}.flavor`, "no flavor: set it here or the top-level `flavor`");
    if (!networkId) c.fail(`${field}.networkId`, "no network: set it here or `network.networkId`");
    if (!p.password && !sshKey) c.fail(`${field}.password`, noLogin(`${field}.password`));
    else if (p.enablePasswordLogin && !p.password) c.fail(`${field}.enablePasswordLogin`, `needs a password: set ${field}.password as a secret, or leave password login off to log in with \`ssh.privateKey\``);
    if (p.fixedIps?.length && !subnetId) c.fail(`${field}.subnetId`, "fixed IPs need the subnet they belong to");
    if (single && p.fixedIps && p.fixedIps.length > 1) c.fail(`${field}.fixedIps`, "a single VM takes one fixed IP");
    return {
        image: image ?? "",
        flavor: flavor ?? "",
        networkId: networkId ?? "",
        subnetId,
        fixedIp: single ? p.fixedIps?.[0] : undefined,
        floatingIpPool: p.floatingIpPool,
        availabilityZone: p.availabilityZone,
        username: p.username,
        password: p.password,
        enablePasswordLogin: p.enablePasswordLogin,
        powerState: config.operate.vnfState === "STOPPED" ? "shutoff" : "active",
    };
}

/** Checks the security-group settings and returns them with normalized CIDRs. */
export function resolveSecurityGroup(config: StackConfig, c: Checker): ClusterSpec["securityGroup"] {
    const allowedCidrs = config.securityGroup.allowedCidrs.map((cidr, i) => c.network(`securityGroup.allowedCidrs[${i}]`, cidr).text);
    const extraRules = config.securityGroup.extraRules.map((r, i) => {
        const field = `securityGroup.extraRules[${i}]`;
        const hasPorts = r.portRangeMin !== undefined || r.portRangeMax !== undefined;
        if (hasPorts && r.protocol !== "tcp" && r.protocol !== "udp") c.fail(`${field}.protocol`, "port ranges need tcp or udp");
        if (r.portRangeMin !== undefined && r.portRangeMax !== undefined && r.portRangeMin > r.portRangeMax) {
            c.fail(`${field}.portRangeMax`, `is below portRangeMin ${r.portRangeMin}`);
        }
        return { ...r, remoteIpPrefix: c.network(`${field}.remoteIpPrefix`, r.remoteIpPrefix).text };
    });
    return { allowedCidrs, extraRules };
}
