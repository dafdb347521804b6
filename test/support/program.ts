/**
 * Runs the Pulumi program (or a component) under `pulumi.runtime.setMocks` and records the resource graph:
 * every registered resource with its type, inputs, options and parent.
 */
import * as pulumi from "@pulumi/pulumi";
import * as fs from "node:fs";
import * as path from "node:path";
import * as YAML from "yaml";

export const PROJECT_DIR = path.resolve(__dirname, "../..");

export interface RecordedResource {
    type: string;
    name: string;
    inputs: Record<string, any>;
    /** Name of the parent resource (from the component tree), if any. */
    parent?: string;
    opts: pulumi.CustomResourceOptions;
}

export class Graph {
    readonly resources: RecordedResource[] = [];

    ofType(type: string): RecordedResource[] {
        return this.resources.filter((r) => r.type === type);
    }

    named(name: string): RecordedResource {
        const found = this.resources.find((r) => r.name === name);
        if (!found) throw new Error(`no resource named ${name}; have ${this.resources.map((r) => r.name).join(", ")}`);
        return found;
    }

    count(type: string): number {
        return this.ofType(type).length;
    }
}

let addressCounter = 0;

/** What a resource's provider computes besides its inputs, by resource type (answered by the mocks). */
export type ComputedOutputs = Record<string, Record<string, unknown>>;

/** What the kubeadm init step computes (an admin kubeconfig, the CA hash), as `kubeadm init` on the first master would. */
export const INIT_OUTPUTS = {
    kubeconfig: "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority-data: Q0E=\n    server: https://10.10.0.100:6443\n  name: kubernetes\nusers:\n- name: kubernetes-admin\n  user:\n    client-key-data: S0VZ\n",
    joinToken: "abcdef.0123456789abcdef",
    caCertHash: `sha256:${"a".repeat(64)}`,
};

/** Installs mocks that record registrations into `graph` and answer like OpenStack (and the kubeadm init step) would. */
export async function installMocks(graph: Graph, stack: string, computed: ComputedOutputs = {}): Promise<void> {
    addressCounter = 0;
    const answers: ComputedOutputs = {
        "pulumi-nodejs:dynamic/k8s-vnf:KubeadmInit": INIT_OUTPUTS,
        // kubespray's cluster.yml writes the same admin.conf as kubeadm's init (kubespray runs kubeadm).
        "pulumi-nodejs:dynamic/k8s-vnf:KubesprayCluster": { adminKubeconfig: INIT_OUTPUTS.kubeconfig },
        "pulumi-nodejs:dynamic/k8s-vnf:AnsibleServer": { ansiblePlaybook: "/usr/bin/ansible-playbook" },
        ...computed,
    };
    await pulumi.runtime.setMocks(
        {
            newResource(args: pulumi.runtime.MockResourceArgs) {
                const state: Record<string, unknown> = { ...args.inputs, ...answers[args.type] };
                const cidrHost = () => `10.10.0.${100 + addressCounter++}`;
                if (args.type === "openstack:networking/port:Port") {
                    const fixed = (args.inputs.fixedIps ?? []).map((f: { ipAddress?: string }) => f.ipAddress).filter(Boolean);
                    state.allFixedIps = fixed.length ? fixed : [cidrHost()];
                }
                if (args.type === "openstack:networking/floatingIp:FloatingIp") state.address = `172.24.4.${10 + addressCounter++}`;
                if (args.type === "openstack:compute/keypair:Keypair") state.name = args.inputs.name;
                // Components register through mocks as well; only custom resources are part of the graph.
                if (args.custom !== false) {
                    const existing = graph.resources.find((r) => r.name === args.name);
                    if (existing) existing.inputs = args.inputs;
                    else graph.resources.push({ type: args.type, name: args.name, inputs: args.inputs, opts: {} });
                }
                return { id: `${args.name}-id`, state };
            },
            call(args: pulumi.runtime.MockCallArgs) {
                return args.inputs;
            },
        },
        "k8s-vnf",
        stack,
        false,
    );
}

/**
 * A transformation that records every resource's options and parent into `graph` (mocks never see
 * options). Children inherit transformations, so putting it on the root component covers the tree.
 */
export function recordingTransformation(graph: Graph): pulumi.ResourceTransformation {
    const names = new WeakMap<pulumi.Resource, string>();
    return (args) => {
        names.set(args.resource, args.name);
        const parent = args.opts.parent ? names.get(args.opts.parent) : undefined;
        const entry = graph.resources.find((r) => r.name === args.name);
        const record = { type: args.type, name: args.name, inputs: args.props as Record<string, any>, parent, opts: args.opts };
        if (entry) Object.assign(entry, { parent, opts: args.opts });
        else graph.resources.push(record);
        return undefined;
    };
}

/**
 * Waits until every resource the transformation saw has also reached the mocks (its inputs resolved):
 * registrations whose inputs wait on other resources' outputs come after the program's own outputs.
 */
export async function settled(graph: Graph, limitMs = 10_000): Promise<void> {
    const pending = () => graph.resources.filter((r) => Object.values(r.inputs ?? {}).some((v) => pulumi.Output.isInstance(v)));
    const started = Date.now();
    while (pending().length && Date.now() - started < limitMs) await new Promise((r) => setTimeout(r, 10));
    if (pending().length) throw new Error(`registrations never completed: ${pending().map((r) => r.name).join(", ")}`);
}

/** Reads an example stack file's `k8s-vnf:` config as the Pulumi config map holds it. */
export function readStackConfig(stack: string): Record<string, string> {
    const doc = YAML.parse(fs.readFileSync(path.join(PROJECT_DIR, "stacks", `Pulumi.${stack}.yaml`), "utf8")) as { config: Record<string, unknown> };
    return toConfigMap(doc.config);
}

/** Pulumi's config map: scalars as text, structured values as JSON. */
export function toConfigMap(config: Record<string, unknown>): Record<string, string> {
    return Object.fromEntries(Object.entries(config).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]));
}

/**
 * Runs `index.ts` as `pulumi up` would, with the given config map; `secretKeys` are the keys Pulumi holds
 * encrypted. Resolves to the stack outputs, or rejects with the program's error.
 */
export async function runProgram(stack: string, config: Record<string, string>, secretKeys: string[], graph: Graph): Promise<Record<string, unknown>> {
    await installMocks(graph, stack);
    pulumi.runtime.setAllConfig(config, secretKeys);
    const entry = require.resolve(path.join(PROJECT_DIR, "index.ts"));
    delete require.cache[entry];
    // As the SDK's runner takes a program's exports (cmd/run/run.ts): a function is called, and what it is awaited.
    const exported = require(entry) as unknown;
    const outputs = (await (exported instanceof Function ? exported() : exported)) as Record<string, unknown>;
    return resolveOutputs(outputs);
}

/** Waits for every Output in a (nested) value. */
export async function resolveOutputs<T>(value: T): Promise<any> {
    if (pulumi.Output.isInstance(value)) return resolveOutputs(await new Promise((resolve) => (value as pulumi.Output<unknown>).apply(resolve)));
    if (Array.isArray(value)) return Promise.all(value.map(resolveOutputs));
    if (value && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
        const entries = await Promise.all(Object.entries(value).map(async ([k, v]) => [k, await resolveOutputs(v)] as const));
        return Object.fromEntries(entries);
    }
    return value;
}

/** Adds passwords to a stack's config map as a user would with `pulumi config set --secret --path`. */
export function withSecrets(config: Record<string, string>, secrets: Record<string, Record<string, unknown>>): { config: Record<string, string>; secretKeys: string[] } {
    const out = { ...config };
    for (const [key, fields] of Object.entries(secrets)) {
        const full = `k8s-vnf:${key}`;
        const current = out[full] ? JSON.parse(out[full]) : {};
        out[full] = JSON.stringify(deepMerge(current, fields));
    }
    return { config: out, secretKeys: Object.keys(secrets).map((k) => `k8s-vnf:${k}`) };
}

function deepMerge(a: any, b: any): any {
    if (Array.isArray(a) && Array.isArray(b)) return a.map((item, i) => (i in b ? deepMerge(item, b[i]) : item));
    if (a && b && typeof a === "object" && typeof b === "object") {
        const out = { ...a };
        for (const [k, v] of Object.entries(b)) out[k] = k in a ? deepMerge(a[k], v) : v;
        return out;
    }
    return b;
}
