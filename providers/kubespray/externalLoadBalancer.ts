/**
 * ExternalLoadBalancer: HAProxy on the cluster's external load-balancer VM (a VM with a port on the outside
 * network and one on the cluster network), see externalLoadBalancer.sh. It replaces Tacker's
 * install_external_lb.sh, which put HAProxy on :8383 round-robin to the masters' :6443 without health checks:
 *
 * - `frontend kube-apiserver` on `apiPort` → every master's `apiServerPort`, round-robin, each checked by a TLS
 *   handshake (`check check-ssl verify none`), as kubespray's example of an external load balancer
 *   (docs/operations/ha-mode.md, "listen kubernetes-apiserver-https");
 * - `frontend nodeports` on every port of `nodePortRange` → the workers, each `server <name> <address>` without
 *   a port: "If unset, the same port the client connected to will be used" (HAProxy configuration manual, 5.2
 *   Server and default-server options, `server <name> <address>[:[port]]`). No health check there (which
 *   fixed port would tell whether a worker serves every NodePort? none: a Service with
 *   `externalTrafficPolicy: Local` answers only where its pods run); `option redispatch` moves a connection a
 *   worker refuses to another one. Present only when there are workers.
 *
 * The file is rewritten only when its text changes, after `haproxy -c` accepted it; HAProxy reloads then (no
 * restart). A refresh reads the live file back: a hand edit shows as drift (`config: "edited"`, or other
 * `backends`), which the next update rewrites.
 *
 * Delete: on the same VM (its host key), HAProxy is stopped, kept from starting at boot, and its file removed:
 * an LB step taken out of the program must not leave the API and every NodePort exposed on the outside network
 * by a configuration nobody updates. A VM that is gone, or a new VM at its address, has nothing of it left.
 */
import { isIP } from "node:net";
import * as pulumi from "@pulumi/pulumi";
import { Failure, onSameMachine, StepDefinition, StepProvider } from "../step";
import { StepResource } from "../stepResource";
import { SshSession, SshTarget } from "../transport/ssh";
import { loadNodeScript, parseReport } from "../kubernetes/scripts";
import { StepPlan } from "../remoteActions";

const SCRIPT = loadNodeScript("externalLoadBalancer.sh", __dirname);

/** A node HAProxy forwards to. */
export interface LoadBalancerServer {
    /** The node's name (the server's name in the HAProxy configuration): lowercase letters, digits, `-`. */
    name: string;
    /** The node's address on the cluster network (IPv4 or IPv6). */
    address: string;
}

/** The servers of each backend, as the live configuration lists them. */
export interface LoadBalancerBackends {
    controlPlanes: LoadBalancerServer[];
    workers: LoadBalancerServer[];
}

interface ExternalLoadBalancerInputs {
    [key: string]: unknown;
    vmId: string;
    apiPort: number;
    apiServerPort: number;
    controlPlanes: LoadBalancerServer[];
    workers: LoadBalancerServer[];
    nodePortRange: [number, number];
}

interface ExternalLoadBalancerState {
    [key: string]: unknown;
    /** The servers the live configuration lists, read back from the file. */
    backends?: LoadBalancerBackends;
    /** Whether the live file is exactly what the inputs make: `current`, `edited` (by hand, or not ours) or `missing`. */
    config?: string;
    /** `running` or `stopped`. */
    haproxy?: string;
}

const NAME_RE = /^[a-z0-9-]+$/;
const isPort = (p: unknown) => Number.isInteger(p) && (p as number) >= 1 && (p as number) <= 65535;

/** Failures of one list of servers, each named by its place (`workers[1].address`). */
function checkServers(key: string, list: unknown, required: boolean): Failure[] {
    if (!Array.isArray(list)) return [{ property: key, reason: "must be a list of {name, address}" }];
    if (required && list.length === 0) return [{ property: key, reason: "must list at least one node" }];
    const failures: Failure[] = [];
    const seen = new Set<string>();
    list.forEach((server: Partial<LoadBalancerServer> | undefined, index) => {
        const name = server?.name;
        if (typeof name !== "string" || !NAME_RE.test(name)) failures.push({ property: `${key}[${index}].name`, reason: "must be lowercase letters, digits and '-'" });
        else if (seen.has(name)) failures.push({ property: `${key}[${index}].name`, reason: `${name} is listed twice` });
        else seen.add(name);
        if (typeof server?.address !== "string" || isIP(server.address) === 0) failures.push({ property: `${key}[${index}].address`, reason: "must be an IP address" });
    });
    return failures;
}

/** The script's arguments after the action: ports, range, master count, then name/address pairs. */
function scriptArgs(i: ExternalLoadBalancerInputs): (string | number)[] {
    const pairs = (list: LoadBalancerServer[]) => list.flatMap((s) => [s.name, s.address]);
    return [i.apiPort, i.apiServerPort, i.nodePortRange[0], i.nodePortRange[1], i.controlPlanes.length, ...pairs(i.controlPlanes), ...pairs(i.workers)];
}

/** The report's `NAME TARGET|...` as servers: the address without port, IPv6 without brackets. */
function parseServers(text: string | undefined): LoadBalancerServer[] {
    return (text ?? "")
        .split("|")
        .filter(Boolean)
        .map((entry) => {
            const [name, target = ""] = entry.split(" ");
            const bracketed = /^\[([^\]]*)\](?::\d+)?$/.exec(target);
            const address = bracketed ? bracketed[1] : /^[^:]+:\d+$/.test(target) ? target.slice(0, target.lastIndexOf(":")) : target;
            return { name, address };
        });
}

function fromReport(stdout: string): ExternalLoadBalancerState {
    const found = parseReport(stdout);
    return {
        backends: { controlPlanes: parseServers(found.controlPlanes), workers: parseServers(found.workers) },
        config: found.config ?? "missing",
        haproxy: found.haproxy ?? "stopped",
    };
}

async function apply(s: SshSession, i: ExternalLoadBalancerInputs): Promise<ExternalLoadBalancerState> {
    return fromReport((await s.runScript(SCRIPT, ["apply", ...scriptArgs(i)], { sudo: true })).stdout);
}

/** The same servers in the same order (key order aside: the engine's Struct sorts an object's keys). */
function sameServers(found: LoadBalancerServer[] | undefined, wanted: LoadBalancerServer[] | undefined): boolean {
    const text = (list: LoadBalancerServer[] | undefined) => (list ?? []).map((s) => `${s.name} ${s.address}`).join("|");
    return found !== undefined && text(found) === text(wanted);
}

export const externalLoadBalancerStep: StepDefinition<ExternalLoadBalancerInputs, ExternalLoadBalancerState> = {
    kind: "ExternalLoadBalancer",
    version: "1",
    outputs: ["backends", "config", "haproxy"],
    replaceOn: ["vmId"],
    deleteBeforeReplace: false,
    deleteSucceedsWhenUnreachable: true,
    validate(i): Failure[] {
        const failures: Failure[] = [];
        if (typeof i.vmId !== "string" || i.vmId === "") failures.push({ property: "vmId", reason: "must be the load balancer VM's id" });
        for (const key of ["apiPort", "apiServerPort"] as const) if (!isPort(i[key])) failures.push({ property: key, reason: "must be a port from 1 to 65535" });
        failures.push(...checkServers("controlPlanes", i.controlPlanes, true), ...checkServers("workers", i.workers, false));
        const range = i.nodePortRange;
        if (!Array.isArray(range) || range.length !== 2 || !isPort(range[0]) || !isPort(range[1]) || range[0] > range[1]) {
            failures.push({ property: "nodePortRange", reason: "must be [first, last]: ports from 1 to 65535, first <= last" });
        } else if (isPort(i.apiPort) && (i.apiPort as number) >= range[0] && (i.apiPort as number) <= range[1]) {
            failures.push({ property: "apiPort", reason: `must lie outside the NodePort range ${range[0]}-${range[1]}` });
        }
        return failures;
    },
    id: (i) => `${i.connection.host}:external-load-balancer`,
    create: (s, i) => apply(s, i),
    update: (s, _olds, news) => apply(s, news),
    async delete() {
        // deleteAcross does the work.
    },
    deleteAcross: (hosts, outs) =>
        onSameMachine(hosts, outs, { label: `ExternalLoadBalancer ${outs.connection.host}`, what: "load balancer VM", skipped: "nothing to stop" }, (s) =>
            s.runScript(SCRIPT, ["remove"], { sudo: true }),
        ),
    async read(s, outs) {
        return fromReport((await s.runScript(SCRIPT, ["report", ...scriptArgs(outs)], { sudo: true, quiet: true })).stdout);
    },
    drifted: (outs) =>
        outs.haproxy !== "running" ||
        outs.config !== "current" ||
        !sameServers(outs.backends?.controlPlanes, outs.controlPlanes) ||
        !sameServers(outs.backends?.workers, outs.workers),
};

export const externalLoadBalancerProvider = new StepProvider(externalLoadBalancerStep);

export interface ExternalLoadBalancerArgs {
    /** How to log into the load-balancer VM (its address on a network this program reaches). */
    connection: pulumi.Input<SshTarget>;
    /** The load-balancer VM's id: a new VM is a new load balancer (the step is replaced). */
    vmId: pulumi.Input<string>;
    /** HAProxy's port for the Kubernetes API on every address of the VM, e.g. 8383 (Tacker's). */
    apiPort: pulumi.Input<number>;
    /** kube-apiserver's port on the masters, e.g. 6443. */
    apiServerPort: pulumi.Input<number>;
    /** Every master, by cluster-network address: the API's backend. At least one. */
    controlPlanes: pulumi.Input<pulumi.Input<LoadBalancerServer>[]>;
    /** Every worker, by cluster-network address: the NodePorts' backend. Empty: no NodePort frontend. */
    workers: pulumi.Input<pulumi.Input<LoadBalancerServer>[]>;
    /** The cluster's NodePort range, [first, last] (Kubernetes' default is [30000, 32767]); HAProxy listens on each. */
    nodePortRange: pulumi.Input<[number, number]>;
}

const externalLoadBalancerPlan: StepPlan<ExternalLoadBalancerArgs> = (a, subject) => [
    {
        when: ["create", "update"],
        action: `render HAProxy on the external load balancer (${subject}): the API over every master, the NodePorts over the workers; written when haproxy -c accepts it, then reloaded`,
        script: SCRIPT,
        rendered: { apiPort: a.apiPort, apiServerPort: a.apiServerPort, controlPlanes: a.controlPlanes, workers: a.workers, nodePortRange: a.nodePortRange },
    },
    { when: ["delete"], action: `stop HAProxy on the external load balancer (${subject}) and remove its configuration, when it is still the same machine`, script: SCRIPT, rendered: ["remove"] },
];

export class ExternalLoadBalancer extends StepResource {
    declare readonly vmId: pulumi.Output<string>;
    /** The servers the live configuration lists. */
    declare readonly backends: pulumi.Output<LoadBalancerBackends>;
    /** `current` when the live file is what the inputs make. */
    declare readonly config: pulumi.Output<string>;
    /** `running` or `stopped`. */
    declare readonly haproxy: pulumi.Output<string>;

    constructor(name: string, args: ExternalLoadBalancerArgs, opts?: pulumi.CustomResourceOptions) {
        super(externalLoadBalancerProvider, externalLoadBalancerStep, externalLoadBalancerPlan, name, args, opts);
    }
}
