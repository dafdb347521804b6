/**
 * NfsClient: nfs-common on a Kubernetes node, so kubelet can mount the storage server's PersistentVolumes
 * (see nfsClient.sh). In each node's chain between its preparation and its membership, so a node joins
 * only once it can mount them: instantiate, scale-out and heal alike. Replaced with its VM; its delete
 * leaves the package (the VM is going, or stays a node).
 */
import * as pulumi from "@pulumi/pulumi";
import { StepDefinition, StepProvider } from "../step";
import { StepResource } from "../stepResource";
import { SshSession, SshTarget } from "../transport/ssh";
import { loadNodeScript, parseReport } from "../kubernetes/scripts";
import { StepPlan } from "../remoteActions";

const SCRIPT = loadNodeScript("nfsClient.sh", __dirname);

interface NfsClientInputs {
    [key: string]: unknown;
    /** The VM's id: a new VM is a new client. */
    vmId: string;
    nodeName: string;
}

interface NfsClientState {
    [key: string]: unknown;
    /** mount.nfs's version; empty when the client is missing. */
    client?: string;
}

/** Runs an action (`apply` installs, `report` only looks); both end with the client they found. */
async function client(s: SshSession, action: "apply" | "report"): Promise<NfsClientState> {
    return { client: parseReport((await s.runScript(SCRIPT, [action], { sudo: true, quiet: action === "report" })).stdout).client ?? "" };
}

export const nfsClientStep: StepDefinition<NfsClientInputs, NfsClientState> = {
    kind: "NfsClient",
    version: "1",
    outputs: ["client"],
    replaceOn: ["vmId"],
    deleteBeforeReplace: false,
    deleteSucceedsWhenUnreachable: true,
    validate: (i) => (typeof i.nodeName === "string" && i.nodeName !== "" ? [] : [{ property: "nodeName", reason: "must name the node" }]),
    id: (i) => `${i.connection.host}:${i.nodeName}:nfs-client`,
    create: (s) => client(s, "apply"),
    update: (s) => client(s, "apply"),
    async delete(_s, outs) {
        console.log(`[NfsClient ${outs.nodeName}] nfs-common stays on the VM`);
    },
    read: (s) => client(s, "report"),
    drifted: (outs) => !outs.client,
};

export const nfsClientProvider = new StepProvider(nfsClientStep);

export interface NfsClientArgs {
    /** How to log into the node. */
    connection: pulumi.Input<SshTarget>;
    /** The node's VM id, through its preparation step. */
    vmId: pulumi.Input<string>;
    /** Kubernetes node name. */
    nodeName: pulumi.Input<string>;
}

const nfsClientPlan: StepPlan<NfsClientArgs> = (a, node) => [
    { when: ["create", "update"], action: `install the NFS client on ${node}`, script: SCRIPT, rendered: { nodeName: a.nodeName } },
];

export class NfsClient extends StepResource {
    declare readonly vmId: pulumi.Output<string>;

    constructor(name: string, args: NfsClientArgs, opts?: pulumi.CustomResourceOptions) {
        super(nfsClientProvider, nfsClientStep, nfsClientPlan, name, args, opts);
    }
}
