/**
 * NodeLabels: labels a worker's Node object, run on a control-plane node. Besides fixed labels (the
 * availability zone), one label can carry the worker's compute host as Nova reports it (`CIS-node`, for
 * pod anti-affinity across hosts): looked up at create and update, and again at refresh, so a worker that
 * moved shows as drift and the next update relabels it. Labels it set and no longer wants are removed.
 */
import * as pulumi from "@pulumi/pulumi";
import { Failure, Hosts, StepDefinition, StepProvider } from "../step";
import { StepResource } from "../stepResource";
import { SshSession, SshTarget } from "../transport/ssh";
import { StepPlan } from "../remoteActions";
import { ComputeApi, computeHostOf } from "./computeHost";
import { ControlPlaneRef, kubectl, nodeLabels, nodeStatus, onControlPlane } from "./kubeadm";
import { onControlPlaneWhileThere } from "./leavingCluster";

type Labels = Record<string, string>;

interface NodeLabelsInputs {
    [key: string]: unknown;
    vmId: string;
    nodeName: string;
    /** Fixed labels. */
    labels: Labels;
    /** Label that carries the compute host; empty: none. */
    computeHostLabel: string;
    /** How to ask Nova for the compute host (secret); needed with computeHostLabel. */
    compute?: ComputeApi;
    controlPlanes: ControlPlaneRef[];
}

interface NodeLabelsState {
    [key: string]: unknown;
    computeHost?: string;
    appliedLabels?: Labels;
}

const LABEL_KEY_RE = /^([a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?\/)?[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE_RE = /^([A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?)?$/;

function wanted(i: Pick<NodeLabelsInputs, "labels" | "computeHostLabel">, computeHost: string | undefined): Labels {
    return i.computeHostLabel && computeHost !== undefined ? { ...i.labels, [i.computeHostLabel]: computeHost } : { ...i.labels };
}

function sameLabels(a: Labels = {}, b: Labels = {}): boolean {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].every((k) => a[k] === b[k]);
}

async function lookUpHost(i: NodeLabelsInputs): Promise<string | undefined> {
    if (!i.computeHostLabel) return undefined;
    if (!i.compute) throw new Error(`${i.nodeName}: the ${i.computeHostLabel} label needs OpenStack credentials (openstack:* config or OS_* variables)`);
    const host = await computeHostOf(i.compute, i.vmId);
    if (!LABEL_VALUE_RE.test(host)) throw new Error(`compute host ${JSON.stringify(host)} of ${i.nodeName} is not a valid label value`);
    return host;
}

async function label(cp: SshSession, name: string, want: Labels, previous: Labels): Promise<void> {
    const removals = Object.keys(previous).filter((k) => !(k in want)).map((k) => `${k}-`);
    const sets = Object.entries(want).map(([k, v]) => `${k}=${v}`);
    await kubectl(cp, ["label", "node", name, ...sets, ...removals, "--overwrite"]);
}

async function apply(hosts: Hosts, i: NodeLabelsInputs, previous: Labels): Promise<NodeLabelsState> {
    const computeHost = await lookUpHost(i);
    const want = wanted(i, computeHost);
    await onControlPlane(hosts, i.controlPlanes, (cp) => label(cp, i.nodeName, want, previous));
    return { computeHost, appliedLabels: want };
}

export const nodeLabelsStep: StepDefinition<NodeLabelsInputs, NodeLabelsState> = {
    kind: "NodeLabels",
    // 2: a delete while an entire heal resets the cluster is no failure (stored code runs the delete).
    // 3: ... also when every master was reset before the delete started (and kubectl's narrower retries, README (16)).
    version: "4",
    outputs: ["computeHost", "appliedLabels"],
    replaceOn: ["vmId"],
    deleteBeforeReplace: false,
    deleteSucceedsWhenUnreachable: true,
    // kubectl runs on whichever master answers first: no master in particular needs to be up.
    ownHost: false,
    validate(i): Failure[] {
        const failures: Failure[] = [];
        const labels = i.labels ?? {};
        for (const [k, v] of Object.entries(labels)) {
            if (!LABEL_KEY_RE.test(k)) failures.push({ property: "labels", reason: `${JSON.stringify(k)} is not a label key` });
            if (typeof v !== "string" || !LABEL_VALUE_RE.test(v)) failures.push({ property: "labels", reason: `the value of ${k} is not a label value` });
        }
        if (i.computeHostLabel && !LABEL_KEY_RE.test(i.computeHostLabel)) failures.push({ property: "computeHostLabel", reason: "must be a label key" });
        if (!Array.isArray(i.controlPlanes) || i.controlPlanes.length === 0) failures.push({ property: "controlPlanes", reason: "must list at least one master" });
        return failures;
    },
    id: (i) => `${i.nodeName}:labels`,
    create: (_s, i, hosts) => apply(hosts, i, {}),
    update: (_s, olds, news, hosts) => apply(hosts, news, olds.appliedLabels ?? {}),
    async delete() {
        // deleteAcross does the work.
    },
    async deleteAcross(hosts, outs) {
        // With the node gone (drained and deleted by its membership), or the cluster going away (an entire
        // heal resetting it meanwhile), there is nothing to unlabel.
        await onControlPlaneWhileThere(hosts, outs.controlPlanes, async (cp) => {
            if ((await nodeStatus(cp, outs.nodeName)) !== undefined) await label(cp, outs.nodeName, {}, outs.appliedLabels ?? {});
        });
    },
    async read(_s, outs, hosts) {
        const found = await onControlPlane(hosts, outs.controlPlanes, async (cp) => ((await nodeStatus(cp, outs.nodeName)) === undefined ? undefined : nodeLabels(cp, outs.nodeName)));
        if (found === undefined) return undefined;
        const managed = Object.keys({ ...outs.labels, ...outs.appliedLabels });
        const appliedLabels = Object.fromEntries(managed.filter((k) => k in found).map((k) => [k, found[k]]));
        return { appliedLabels, computeHost: await lookUpHost(outs) };
    },
    drifted: (outs) => !sameLabels(outs.appliedLabels, wanted(outs, outs.computeHost)),
};

export const nodeLabelsProvider = new StepProvider(nodeLabelsStep);

export interface NodeLabelsArgs {
    /** The first master's login: identifies the step (kubectl runs on whichever of `controlPlanes` answers). */
    connection: pulumi.Input<SshTarget>;
    /** The worker's VM id (through its membership): Nova is asked about this server. */
    vmId: pulumi.Input<string>;
    /** Kubernetes node name. */
    nodeName: pulumi.Input<string>;
    /** Fixed labels, e.g. the availability zone. */
    labels: pulumi.Input<Record<string, pulumi.Input<string>>>;
    /** Label key for the compute host (`CIS-node`); empty: none. */
    computeHostLabel: pulumi.Input<string>;
    /** OpenStack credentials for the compute-host lookup (secret). */
    compute?: pulumi.Input<ComputeApi>;
    /** The masters, tried in order. */
    controlPlanes: pulumi.Input<pulumi.Input<ControlPlaneRef>[]>;
}

const nodeLabelsPlan: StepPlan<NodeLabelsArgs> = (a, node) => [
    { when: ["create", "update"], action: `label ${node} on a control-plane node (its compute host looked up in Nova when labelled with it), labels no longer wanted removed`, rendered: { labels: a.labels, computeHostLabel: a.computeHostLabel } },
    { when: ["delete"], action: `remove the labels it set from ${node}, when the node is still there`, rendered: { nodeName: a.nodeName } },
];

export class NodeLabels extends StepResource {
    declare readonly appliedLabels: pulumi.Output<Labels>;
    declare readonly computeHost: pulumi.Output<string | undefined>;

    constructor(name: string, args: NodeLabelsArgs, opts?: pulumi.CustomResourceOptions) {
        super(nodeLabelsProvider, nodeLabelsStep, nodeLabelsPlan, name, args, opts, { inputs: ["compute", "controlPlanes"] });
    }
}
