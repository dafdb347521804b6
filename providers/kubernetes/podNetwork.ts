/**
 * PodNetwork: the cluster's CNI (Calico by default), applied on whichever master answers (see
 * podNetwork.sh). A step of its own, after the init and before the workers join, as Tacker's driver orders
 * them: a new manifest or proxy re-applies it and leaves the cluster alone, and a new cluster (an
 * entire-cluster heal: another CA) gets it anew. Nothing is removed on delete: the network goes with its
 * cluster.
 */
import * as pulumi from "@pulumi/pulumi";
import { Failure, StepDefinition, StepProvider } from "../step";
import { StepResource } from "../stepResource";
import { SshSession, SshTarget } from "../transport/ssh";
import { clusterCaCertHash, ControlPlaneRef, isCaCertHash, listsControlPlanes, onControlPlane } from "./kubeadm";
import { NodeProxy, proxyEnvironment } from "./nodePrep";
import { StepPlan } from "../remoteActions";
import { loadNodeScript } from "./scripts";

const SCRIPT = loadNodeScript("podNetwork.sh");
const ATTEMPTS = 60;
const INTERVAL_SECONDS = 5;

interface PodNetworkInputs {
    [key: string]: unknown;
    /** URL of the CNI manifest, or an absolute path on the masters. */
    cniManifest: string;
    /** Proxy for fetching the manifest. */
    proxy: NodeProxy;
    /** The cluster's CA hash: another cluster is another network. */
    caCertHash: string;
    controlPlanes: ControlPlaneRef[];
}

async function apply(cp: SshSession, i: PodNetworkInputs): Promise<void> {
    await cp.runScript(SCRIPT, ["apply", i.cniManifest, ATTEMPTS, INTERVAL_SECONDS], { sudo: true, env: proxyEnvironment(i.proxy) });
}

export const podNetworkStep: StepDefinition<PodNetworkInputs> = {
    kind: "PodNetwork",
    version: "1",
    outputs: [],
    replaceOn: ["caCertHash"],
    deleteBeforeReplace: false,
    deleteSucceedsWhenUnreachable: true,
    // kubectl runs on whichever master answers first: no master in particular needs to be up.
    ownHost: false,
    validate(i): Failure[] {
        const failures: Failure[] = [];
        if (typeof i.cniManifest !== "string" || !/^(https?:\/\/\S+|\/\S+)$/.test(i.cniManifest)) failures.push({ property: "cniManifest", reason: "must be an http(s) URL or an absolute path on the master" });
        else if (/^https?:\/\/[^/]*@/.test(i.cniManifest)) failures.push({ property: "cniManifest", reason: "must not carry credentials: kubectl is given it on its command line" });
        if (!isCaCertHash(i.caCertHash)) failures.push({ property: "caCertHash", reason: "must be sha256:<64 hex digits>" });
        if (!listsControlPlanes(i.controlPlanes) || i.controlPlanes.length === 0) {
            failures.push({ property: "controlPlanes", reason: "must list the masters as {name, connection}" });
        }
        return failures;
    },
    id: (i) => `${i.connection.host}:pod-network`,
    async create(_s, i, hosts) {
        await onControlPlane(hosts, i.controlPlanes, (cp) => apply(cp, i));
        return {};
    },
    async update(_s, olds, news, hosts) {
        // A master's new host key (a healed master) changes nothing in the cluster.
        if (olds.cniManifest !== news.cniManifest || JSON.stringify(olds.proxy) !== JSON.stringify(news.proxy)) await onControlPlane(hosts, news.controlPlanes, (cp) => apply(cp, news));
        return {};
    },
    async delete() {
        // The network goes with its cluster.
    },
    async read(_s, outs, hosts) {
        return (await clusterCaCertHash(hosts, outs.controlPlanes)) === outs.caCertHash ? {} : undefined;
    },
};

export const podNetworkProvider = new StepProvider(podNetworkStep);

export interface PodNetworkArgs {
    /** The first master's login: identifies the step (kubectl runs on whichever of `controlPlanes` answers). */
    connection: pulumi.Input<SshTarget>;
    /** CNI manifest URL, or an absolute path on the masters. */
    cniManifest: pulumi.Input<string>;
    /** Proxy for fetching the manifest (exported to kubectl, never on its command line). */
    proxy: pulumi.Input<NodeProxy>;
    /** The cluster's CA hash (from the init): a re-created cluster gets its network anew. */
    caCertHash: pulumi.Input<string>;
    /** The masters, tried in order, each pinned to its current host key. */
    controlPlanes: pulumi.Input<pulumi.Input<ControlPlaneRef>[]>;
}

const podNetworkPlan: StepPlan<PodNetworkArgs> = (a) => [
    { when: ["create", "update"], action: "kubectl apply the CNI manifest on a control-plane node, retried while the API server starts", script: SCRIPT, rendered: { cniManifest: a.cniManifest, caCertHash: a.caCertHash } },
];

export class PodNetwork extends StepResource {
    constructor(name: string, args: PodNetworkArgs, opts?: pulumi.CustomResourceOptions) {
        super(podNetworkProvider, podNetworkStep, podNetworkPlan, name, args, opts, { inputs: ["proxy", "controlPlanes"] });
    }
}
