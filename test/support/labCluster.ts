/**
 * Plays the engine's part for the kubeadm steps on lab hosts: the inputs come from the same plan functions
 * the component uses (components/kubeadmPlan.ts), every step runs through its real provider host (check,
 * diff, create, update, delete, read over gRPC), and steps start when the steps they depend on are done,
 * in parallel otherwise, as `pulumi up` schedules them. State (each resource's outputs) is kept here.
 */
import { strict as assert } from "node:assert";
import { parseVnfConfig } from "../../config/load";
import { ClusterSpec } from "../../config/spec";
import { clusterSettings, controlPlaneEndpoint, hostsEntries, nodeProxy, PlannedNode, vrrpPriority, vrrpRouterId, workerLabels } from "../../components/kubeadmPlan";
import { apiLoadBalancerStep } from "../../providers/kubernetes/apiLoadBalancer";
import { ComputeApi } from "../../providers/kubernetes/computeHost";
import { controlPlaneMemberStep } from "../../providers/kubernetes/controlPlaneMember";
import { ControlPlaneRef } from "../../providers/kubernetes/kubeadm";
import { kubeadmInitStep } from "../../providers/kubernetes/kubeadmInit";
import { nodeLabelsStep } from "../../providers/kubernetes/nodeLabels";
import { kubernetesNodeStep } from "../../providers/kubernetes/nodePrep";
import { workerMemberStep } from "../../providers/kubernetes/workerMember";
import { Lab } from "../lab/lab";
import { PROJECT_DIR } from "./program";
import { ProviderHost } from "./providerHost";

type Props = Record<string, unknown>;

/** A step to schedule: runs once everything named in `after` has finished. */
export interface ScheduledStep {
    name: string;
    after: string[];
    run: () => Promise<void>;
}

/** Runs steps as the engine does: each as soon as its dependencies are done; the first failure wins. */
export async function runScheduled(steps: ScheduledStep[]): Promise<void> {
    const done = new Map<string, Promise<void>>();
    const byName = new Map(steps.map((s) => [s.name, s]));
    const start = (step: ScheduledStep): Promise<void> => {
        let p = done.get(step.name);
        if (!p) {
            p = Promise.all(step.after.filter((n) => byName.has(n)).map((n) => start(byName.get(n)!))).then(() => step.run());
            done.set(step.name, p);
        }
        return p;
    };
    const results = await Promise.allSettled(steps.map(start));
    const failed = results.find((r) => r.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
}

const PROVIDERS = {
    node: ["providers/kubernetes/nodePrep.ts", "kubernetesNodeProvider", kubernetesNodeStep.version],
    lb: ["providers/kubernetes/apiLoadBalancer.ts", "apiLoadBalancerProvider", apiLoadBalancerStep.version],
    init: ["providers/kubernetes/kubeadmInit.ts", "kubeadmInitProvider", kubeadmInitStep.version],
    master: ["providers/kubernetes/controlPlaneMember.ts", "controlPlaneMemberProvider", controlPlaneMemberStep.version],
    worker: ["providers/kubernetes/workerMember.ts", "workerMemberProvider", workerMemberStep.version],
    labels: ["providers/kubernetes/nodeLabels.ts", "nodeLabelsProvider", nodeLabelsStep.version],
} as const;
export type StepKind = keyof typeof PROVIDERS;

export interface LabClusterOptions {
    masters: number;
    workers: number;
    flavour?: "simple" | "complex" | "podaffinity";
    /** Extra stack config (k8s-vnf: keys), e.g. proxy or kubernetes.drainTimeout. */
    config?: Record<string, unknown>;
    /** Nova stand-in for podaffinity. */
    compute?: ComputeApi;
}

/** The lab host names of a cluster, as VM names: `lab-master-0`, `lab-worker-2`. */
export const nodeName = (role: "master" | "worker", i: number) => `lab-${role}-${i}`;

export class LabCluster {
    readonly spec: ClusterSpec;
    /** Resource outputs by resource name, as the engine's state holds them. */
    readonly state = new Map<string, Props>();
    /** Every provider call made, in order: `<create|update|delete|read> <resource>`. */
    readonly calls: string[] = [];
    private readonly providers = new Map<StepKind, ProviderHost>();
    private vmGeneration = new Map<string, number>();
    workers: number;

    constructor(
        private readonly lab: Lab,
        private readonly options: LabClusterOptions,
    ) {
        const address = (role: "master" | "worker", i: number) => `${lab.subnet}.${10 + (role === "master" ? i : options.masters + i)}`;
        const addresses = (role: "master" | "worker", n: number) => Array.from({ length: n }, (_, i) => address(role, i));
        this.workers = options.workers;
        const raw = {
            vnfName: "lab",
            flavour: options.flavour ?? (options.masters > 1 ? "complex" : "simple"),
            image: "lab-image",
            flavor: "lab-flavor",
            network: { networkId: "lab-net", subnetId: "lab-subnet" },
            ...(options.masters > 1 ? { controlPlane: { vip: this.vip() } } : {}),
            ...options.config,
            masters: { count: options.masters, fixedIps: addresses("master", options.masters), password: lab.password, ...(options.config?.masters as object) },
            workers: { count: options.workers, maxCount: 20, fixedIps: addresses("worker", 20), password: lab.password, ...(options.config?.workers as object) },
            kubernetes: { cniManifest: "https://projectcalico.example/calico.yaml", ...(options.config?.kubernetes as object) },
        };
        this.spec = parseVnfConfig(raw, { stackName: "lab", baseDir: PROJECT_DIR }).spec as ClusterSpec;
    }

    /** The VIP: an address of the lab's subnet no host has. */
    vip(): string {
        return `${this.lab.subnet}.200`;
    }

    /** Host names in start order: masters, then workers. */
    hostNames(workers = this.workers): string[] {
        return [...Array.from({ length: this.options.masters }, (_, i) => nodeName("master", i)), ...Array.from({ length: workers }, (_, i) => nodeName("worker", i))];
    }

    async startProviders(): Promise<void> {
        await Promise.all(
            (Object.keys(PROVIDERS) as StepKind[]).map(async (kind) => {
                const [file, exportName] = PROVIDERS[kind];
                this.providers.set(kind, await ProviderHost.start(file, exportName));
            }),
        );
    }

    /** Everything the provider hosts printed (for secret scans). */
    output(): string {
        return [...this.providers.values()].map((p) => p.output).join("\n");
    }

    stop(): void {
        for (const p of this.providers.values()) p.stop();
        this.providers.clear();
    }

    private get masters(): PlannedNode[] {
        return Array.from({ length: this.options.masters }, (_, i) => ({ name: nodeName("master", i), address: this.lab.host(nodeName("master", i)).address }));
    }

    private connection(host: string) {
        return this.lab.target(host, "password");
    }

    /** A new VM id for a host (a heal gives it the next one). */
    vmId(host: string): string {
        return `vm-${host}-${this.vmGeneration.get(host) ?? 0}`;
    }

    private controlPlanes(): ControlPlaneRef[] {
        return this.masters.map((m) => ({ name: m.name, connection: { ...this.connection(m.name), hostKeyFingerprint: this.state.get(`${m.name}-node`)?.hostKeyFingerprint as string } }));
    }

    /** The inputs the component gives each resource (see components/kubeadmCluster.ts). */
    inputs(resource: string): { kind: StepKind; props: Props } {
        const spec = this.spec;
        const vip = spec.ha ? this.vip() : undefined;
        const masters = this.masters;
        const proxy = nodeProxy(spec, masters, vip);
        const endpoint = controlPlaneEndpoint(spec, masters, vip);
        const [host, step] = resource.replace(/^(lab-(?:master|worker)-\d+)-/, "$1|").split("|");
        const role = host.includes("master") ? "master" : "worker";
        const index = Number(host.split("-").pop());
        const envelope = (kind: StepKind, connectionHost: string) => ({ connection: this.connection(connectionHost), providerVersion: PROVIDERS[kind][2] });
        const vmIdFrom = (r: string) => (this.state.get(r)?.vmId as string) ?? this.vmId(host);
        const caCertHash = this.state.get("init")?.caCertHash as string;
        if (resource === "init") {
            const first = masters[0];
            return {
                kind: "init",
                props: {
                    ...envelope("init", first.name),
                    nodeName: first.name,
                    address: first.address,
                    endpoint,
                    proxy,
                    ...clusterSettings(spec),
                },
            };
        }
        const address = this.lab.host(host).address;
        switch (step) {
            case "node":
                return {
                    kind: "node",
                    props: {
                        ...envelope("node", host),
                        vmId: this.vmId(host),
                        nodeName: host,
                        kubernetesVersion: spec.kubernetes.version,
                        packageRepository: spec.kubernetes.packageRepository,
                        proxy,
                        hostsEntries: hostsEntries({ name: host, address }, masters),
                    },
                };
            case "api-lb":
                return {
                    kind: "lb",
                    props: {
                        ...envelope("lb", host),
                        vmId: vmIdFrom(`${host}-node`),
                        address,
                        vip: vip!,
                        routerId: vrrpRouterId(vip!),
                        priority: vrrpPriority(index),
                        frontendPort: spec.controlPlane.haproxyPort,
                        apiServerPort: spec.controlPlane.apiServerPort,
                        backends: masters,
                    },
                };
            case "member":
                if (role === "master") {
                    return {
                        kind: "master",
                        props: {
                            ...envelope("master", host),
                            vmId: vmIdFrom(spec.ha ? `${host}-api-lb` : `${host}-node`),
                            nodeName: host,
                            address,
                            apiServerPort: spec.controlPlane.apiServerPort,
                            endpoint,
                            caCertHash,
                            peers: this.controlPlanes().filter((c) => c.name !== host),
                            loadBalanced: spec.ha,
                        },
                    };
                }
                return {
                    kind: "worker",
                    props: {
                        ...envelope("worker", host),
                        vmId: vmIdFrom(`${host}-node`),
                        nodeName: host,
                        endpoint,
                        caCertHash,
                        controlPlanes: this.controlPlanes(),
                        drainTimeoutSeconds: spec.kubernetes.drainTimeout,
                    },
                };
            case "labels": {
                const labels = workerLabels(spec)!;
                return {
                    kind: "labels",
                    props: {
                        ...envelope("labels", masters[0].name),
                        vmId: vmIdFrom(`${host}-member`),
                        nodeName: host,
                        labels: labels.labels,
                        computeHostLabel: labels.computeHostLabel,
                        ...(this.options.compute ? { compute: this.options.compute } : {}),
                        controlPlanes: this.controlPlanes(),
                    },
                };
            }
        }
        throw new Error(`no such resource ${resource}`);
    }

    /** The resources of the cluster with their dependencies, as the component registers them. */
    graph(workers = this.workers): { name: string; after: string[] }[] {
        const out: { name: string; after: string[] }[] = [];
        const ha = this.spec.ha;
        for (let i = 0; i < this.options.masters; i++) {
            const m = nodeName("master", i);
            out.push({ name: `${m}-node`, after: [] });
            if (ha) out.push({ name: `${m}-api-lb`, after: [`${m}-node`] });
        }
        const m0 = nodeName("master", 0);
        out.push({ name: "init", after: [`${m0}-node`, ...(ha ? [`${m0}-api-lb`] : [])] });
        for (let i = 0; i < this.options.masters; i++) {
            const m = nodeName("master", i);
            out.push({ name: `${m}-member`, after: ["init", ha ? `${m}-api-lb` : `${m}-node`, ...(i > 0 ? [`${nodeName("master", i - 1)}-member`] : [])] });
        }
        const labelled = workerLabels(this.spec) !== undefined;
        for (let i = 0; i < workers; i++) {
            const w = nodeName("worker", i);
            out.push({ name: `${w}-node`, after: [] }, { name: `${w}-member`, after: ["init", `${w}-node`] });
            if (labelled) out.push({ name: `${w}-labels`, after: [`${w}-member`] });
        }
        return out;
    }

    /** check then create, as the engine does for a new resource; the outputs go into the state. */
    async create(resource: string): Promise<Props> {
        const { kind, props } = this.inputs(resource);
        const provider = this.providers.get(kind)!;
        const checked = await provider.check({}, props);
        assert.deepEqual(checked.failures, [], `${resource}: check failed`);
        this.calls.push(`create ${resource}`);
        const { outs } = await provider.create(props);
        this.state.set(resource, outs);
        return outs;
    }

    /** diff, then update (or replace: delete first, then create) when the diff asks for it. */
    async apply(resource: string): Promise<"same" | "updated" | "replaced" | "created"> {
        const olds = this.state.get(resource);
        if (!olds) {
            await this.create(resource);
            return "created";
        }
        const { kind, props } = this.inputs(resource);
        const provider = this.providers.get(kind)!;
        const diff = await provider.diff("id", olds, props);
        if (diff.changes !== "some") return "same";
        if (diff.replaces.length) {
            await this.delete(resource);
            await this.create(resource);
            return "replaced";
        }
        this.calls.push(`update ${resource}`);
        this.state.set(resource, await provider.update("id", olds, props));
        return "updated";
    }

    async delete(resource: string): Promise<void> {
        const { kind } = this.inputs(resource);
        this.calls.push(`delete ${resource}`);
        await this.providers.get(kind)!.delete("id", this.state.get(resource)!);
        this.state.delete(resource);
    }

    /** What `pulumi refresh` asks a resource; the state takes the answer. */
    async read(resource: string): Promise<{ id: string; props: Props }> {
        const { kind } = this.inputs(resource);
        this.calls.push(`read ${resource}`);
        const found = await this.providers.get(kind)!.read("id", this.state.get(resource)!);
        if (found.id) this.state.set(resource, found.props);
        return found;
    }

    /** Diff of a resource's refreshed state against its inputs, as the next `up` sees it. */
    async diff(resource: string) {
        const { kind, props } = this.inputs(resource);
        return this.providers.get(kind)!.diff("id", this.state.get(resource)!, props);
    }

    /** `pulumi up` from nothing: every resource of the graph, scheduled by dependency. */
    async instantiate(): Promise<void> {
        await runScheduled(this.graph().map((r) => ({ ...r, run: () => this.create(r.name).then(() => undefined) })));
    }

    /** `pulumi up` with a new worker count: new workers are created; removed ones deleted (labels, member, node), last first. */
    async scaleTo(workers: number): Promise<void> {
        this.workers = workers;
        const added = this.graph(workers).filter((r) => !this.state.has(r.name));
        await runScheduled(added.map((r) => ({ ...r, run: () => this.create(r.name).then(() => undefined) })));
        const removed = [...this.state.keys()].filter((r) => /^lab-worker-\d+-node$/.test(r) && Number(r.split("-")[2]) >= workers).map((r) => r.replace(/-node$/, ""));
        const results = await Promise.allSettled(removed.map((w) => this.removeChain(w)));
        const failed = results.find((r) => r.status === "rejected");
        if (failed) throw (failed as PromiseRejectedResult).reason;
    }

    /** Deletes a node's resources in reverse dependency order (what the engine does after the program ran). */
    async removeChain(host: string): Promise<void> {
        for (const step of ["labels", "member", "api-lb", "node"]) if (this.state.has(`${host}-${step}`)) await this.delete(`${host}-${step}`);
    }

    /**
     * Heal of one node as the engine runs it for a VM with delete-before-replace: the dependents that
     * carry the VM id are deleted first (labels, membership, load balancer, node), the VM is replaced
     * (here: a fresh lab host at the same address), then the chain is created again; peers whose inputs
     * changed (a master's new host key) are updated.
     */
    async heal(host: string): Promise<void> {
        await this.removeChain(host);
        await this.rejoin(host);
    }

    /** The second half of a heal: a new VM in place of `host`, its chain created, its peers updated. */
    async rejoin(host: string): Promise<void> {
        await this.lab.replace(host);
        this.vmGeneration.set(host, (this.vmGeneration.get(host) ?? 0) + 1);
        const chain = this.graph().filter((r) => r.name.startsWith(`${host}-`));
        await runScheduled(chain.map((r) => ({ ...r, after: r.after.filter((a) => a.startsWith(`${host}-`)), run: () => this.create(r.name).then(() => undefined) })));
        const others = this.graph().filter((r) => !r.name.startsWith(`${host}-`));
        for (const r of others) await this.apply(r.name);
    }
}
