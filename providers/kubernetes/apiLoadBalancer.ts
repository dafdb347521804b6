/**
 * ApiLoadBalancer: HAProxy and keepalived on one master of an HA cluster (see apiLoadBalancer.sh). Every
 * master lists every master as a backend, so a change of the set of masters updates each of them.
 */
import * as pulumi from "@pulumi/pulumi";
import { Failure, StepDefinition, StepProvider } from "../step";
import { StepResource } from "../stepResource";
import { SshSession, SshTarget } from "../transport/ssh";
import { StepPlan } from "../remoteActions";
import { loadNodeScript, parseReport } from "./scripts";

const SCRIPT = loadNodeScript("apiLoadBalancer.sh");

export interface Backend {
    name: string;
    address: string;
}

interface ApiLoadBalancerInputs {
    [key: string]: unknown;
    vmId: string;
    address: string;
    vip: string;
    /** VRRP router id, the same on every master of the cluster. */
    routerId: number;
    /** Higher wins the VIP; by master index. */
    priority: number;
    frontendPort: number;
    apiServerPort: number;
    backends: Backend[];
}

interface ApiLoadBalancerState {
    [key: string]: unknown;
    haproxy?: string;
    keepalived?: string;
}

const IP_RE = /^[0-9a-fA-F.:]+$/;
const isPort = (p: unknown) => Number.isInteger(p) && (p as number) >= 1 && (p as number) <= 65535;

async function apply(s: SshSession, i: ApiLoadBalancerInputs): Promise<ApiLoadBalancerState> {
    await s.runScript(SCRIPT, ["apply", i.address, i.vip, i.routerId, i.priority, i.frontendPort, i.apiServerPort, ...i.backends.flatMap((b) => [b.name, b.address])], { sudo: true });
    return { haproxy: "running", keepalived: "running" };
}

export const apiLoadBalancerStep: StepDefinition<ApiLoadBalancerInputs, ApiLoadBalancerState> = {
    kind: "ApiLoadBalancer",
    version: "1",
    outputs: ["haproxy", "keepalived"],
    replaceOn: ["vmId"],
    deleteBeforeReplace: false,
    deleteSucceedsWhenUnreachable: true,
    validate(i): Failure[] {
        const failures: Failure[] = [];
        for (const key of ["address", "vip"] as const) if (typeof i[key] !== "string" || !IP_RE.test(i[key] as string)) failures.push({ property: key, reason: "must be an IP address" });
        if (!Number.isInteger(i.routerId) || (i.routerId as number) < 1 || (i.routerId as number) > 255) failures.push({ property: "routerId", reason: "must be a VRRP router id from 1 to 255" });
        if (!Number.isInteger(i.priority) || (i.priority as number) < 1 || (i.priority as number) > 254) failures.push({ property: "priority", reason: "must be from 1 to 254" });
        for (const key of ["frontendPort", "apiServerPort"] as const) if (!isPort(i[key])) failures.push({ property: key, reason: "must be a port from 1 to 65535" });
        if (!Array.isArray(i.backends) || i.backends.length === 0 || i.backends.some((b) => !/^[a-z0-9-]+$/.test(b?.name ?? "") || !IP_RE.test(b?.address ?? ""))) {
            failures.push({ property: "backends", reason: "must list every master as {name, address}" });
        }
        return failures;
    },
    id: (i) => `${i.connection.host}:api-load-balancer`,
    create: (s, i) => apply(s, i),
    update: (s, _olds, news) => apply(s, news),
    async delete(s) {
        // Hand the VIP to a peer now rather than when VRRP adverts stop.
        await s.runScript(SCRIPT, ["stop"], { sudo: true });
    },
    async read(s) {
        const found = parseReport((await s.runScript(SCRIPT, ["report"], { sudo: true })).stdout);
        const backends = (found.backends ?? "")
            .split("|")
            .filter(Boolean)
            .map((entry) => {
                const [name, target] = entry.split(" ");
                return { name, address: target.slice(0, target.lastIndexOf(":")) };
            });
        return { backends, haproxy: found.haproxy ?? "", keepalived: found.keepalived ?? "" };
    },
    drifted: (outs) => outs.haproxy !== "running" || outs.keepalived !== "running",
};

export const apiLoadBalancerProvider = new StepProvider(apiLoadBalancerStep);

export interface ApiLoadBalancerArgs {
    /** How to log into the master. */
    connection: pulumi.Input<SshTarget>;
    /** The master's VM id (through its node step), so a new VM gets a new load balancer. */
    vmId: pulumi.Input<string>;
    /** The master's own address: keepalived's interface and VRRP source. */
    address: pulumi.Input<string>;
    /** The control-plane VIP. */
    vip: pulumi.Input<string>;
    /** VRRP router id shared by the masters. */
    routerId: pulumi.Input<number>;
    /** VRRP priority of this master. */
    priority: pulumi.Input<number>;
    /** HAProxy's port on every master (and so on the VIP). */
    frontendPort: pulumi.Input<number>;
    /** kube-apiserver's port on every master. */
    apiServerPort: pulumi.Input<number>;
    /** Every master, as HAProxy backends. */
    backends: pulumi.Input<pulumi.Input<Backend>[]>;
}

const apiLoadBalancerPlan: StepPlan<ApiLoadBalancerArgs> = (a, subject) => [
    {
        when: ["create", "update"],
        action: `render HAProxy (every master a backend) and keepalived (the VIP) on ${subject}, checked, then reloaded`,
        script: SCRIPT,
        rendered: { address: a.address, vip: a.vip, routerId: a.routerId, priority: a.priority, frontendPort: a.frontendPort, apiServerPort: a.apiServerPort, backends: a.backends },
    },
    { when: ["delete"], action: `stop keepalived and HAProxy on ${subject} (a peer takes the VIP)`, script: SCRIPT, rendered: ["stop"] },
];

export class ApiLoadBalancer extends StepResource {
    declare readonly vmId: pulumi.Output<string>;

    constructor(name: string, args: ApiLoadBalancerArgs, opts?: pulumi.CustomResourceOptions) {
        super(apiLoadBalancerProvider, apiLoadBalancerStep, apiLoadBalancerPlan, name, args, opts);
    }
}
