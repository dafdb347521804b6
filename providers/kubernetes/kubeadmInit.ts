/**
 * KubeadmInit: the cluster itself, created once by `kubeadm init` on the first master, with the CNI.
 * Its outputs (admin kubeconfig, a join token valid for a day, the CA hash) are secret. Members join with
 * credentials they fetch fresh, so these outputs never go stale for them. Its Kubernetes version is fixed
 * (versionPin.ts).
 */
import * as pulumi from "@pulumi/pulumi";
import { Failure, StepDefinition } from "../step";
import { StepResource } from "../stepResource";
import { SshSession, SshTarget } from "../transport/ssh";
import { sh } from "../transport/shell";
import { InitSettings, joinCredentials, kubeadmInit, kubeadmReset, nodeStatus } from "./kubeadm";
import { NodeProxy } from "./nodePrep";
import { versionChangeRefusal, VersionPinnedProvider } from "./versionPin";

interface KubeadmInitInputs extends InitSettings {
    [key: string]: unknown;
    /** URL of the CNI manifest (Calico by default). */
    cniManifest: string;
    proxy: NodeProxy;
    /** Raising it re-creates the cluster (entire-cluster heal). */
    clusterGeneration: number;
}

interface KubeadmInitOutputs {
    [key: string]: unknown;
    kubeconfig: string;
    joinToken: string;
    caCertHash: string;
}

const CNI_ATTEMPTS = 60;
const CNI_INTERVAL_SECONDS = 5;
const INITIAL_TOKEN_TTL = "24h";

/** The API server takes a while to answer after init; kubectl apply is retried, within a bound. */
async function applyCni(s: SshSession, i: KubeadmInitInputs): Promise<void> {
    const env = [`https_proxy=${i.proxy.httpsProxy}`, `http_proxy=${i.proxy.httpProxy}`, `no_proxy=${i.proxy.noProxy}`];
    await s.exec(
        sh`for attempt in $(seq ${CNI_ATTEMPTS}); do env ${env} kubectl --kubeconfig /etc/kubernetes/admin.conf apply -f ${i.cniManifest} && exit 0; echo "attempt $attempt: the API server is not answering yet" >&2; sleep ${CNI_INTERVAL_SECONDS}; done; exit 1`,
        { sudo: true },
    );
}

async function clusterOutputs(s: SshSession): Promise<KubeadmInitOutputs> {
    const { token, caCertHash } = await joinCredentials(s, false, INITIAL_TOKEN_TTL);
    const kubeconfig = (await s.exec(sh`cat /etc/kubernetes/admin.conf`, { sudo: true, quiet: true })).stdout;
    return { kubeconfig, joinToken: token, caCertHash };
}

const CIDR_RE = /^[0-9a-fA-F.:]+\/\d{1,3}$/;

export const kubeadmInitStep: StepDefinition<KubeadmInitInputs, KubeadmInitOutputs> = {
    kind: "KubeadmInit",
    version: "2",
    outputs: ["kubeconfig", "joinToken", "caCertHash"],
    replaceOn: ["endpoint", "podCidr", "serviceCidr", "clusterGeneration"],
    deleteBeforeReplace: true,
    deleteSucceedsWhenUnreachable: true,
    validate(i): Failure[] {
        const failures: Failure[] = [];
        if (typeof i.endpoint !== "string" || !/^[0-9a-zA-Z.:-]+:\d+$/.test(i.endpoint)) failures.push({ property: "endpoint", reason: "must be host:port" });
        for (const key of ["podCidr", "serviceCidr"] as const) if (typeof i[key] !== "string" || !CIDR_RE.test(i[key] as string)) failures.push({ property: key, reason: "must be a CIDR" });
        if (typeof i.cniManifest !== "string" || !/^(https?:\/\/\S+|\/\S+)$/.test(i.cniManifest)) failures.push({ property: "cniManifest", reason: "must be an http(s) URL or an absolute path on the master" });
        if (!Number.isInteger(i.clusterGeneration) || (i.clusterGeneration as number) < 0) failures.push({ property: "clusterGeneration", reason: "must be a whole number ≥ 0" });
        return failures;
    },
    id: (i) => `${i.connection.host}:kubeadm-init`,
    async create(s, i) {
        // A re-run after a failure half-way: the cluster is there, only what followed init is redone.
        if ((await nodeStatus(s, i.nodeName).catch(() => undefined)) === undefined) {
            await kubeadmInit(s, i);
            console.log(`[KubeadmInit ${i.nodeName}] control plane initialized at ${i.endpoint}`);
        }
        await applyCni(s, i);
        return clusterOutputs(s);
    },
    async update(s, olds, news) {
        // Check refuses this first (versionPin.ts); kept for a check that was skipped.
        if (olds.kubernetesVersion !== news.kubernetesVersion) throw new Error(versionChangeRefusal(olds.kubernetesVersion, news.kubernetesVersion));
        if (olds.cniManifest !== news.cniManifest || olds.proxy?.httpsProxy !== news.proxy.httpsProxy) await applyCni(s, news);
        return { kubeconfig: olds.kubeconfig, joinToken: olds.joinToken, caCertHash: olds.caCertHash };
    },
    async delete(s) {
        await kubeadmReset(s);
    },
    async read(s, outs) {
        const status = await nodeStatus(s, outs.nodeName).catch(() => undefined);
        if (status === undefined) return undefined;
        const hash = await joinCredentials(s, false, "1m").then((c) => c.caCertHash);
        return { caCertHash: hash };
    },
};

export const kubeadmInitProvider = new VersionPinnedProvider(kubeadmInitStep);

export interface KubeadmInitArgs {
    /** How to log into the first master. */
    connection: pulumi.Input<SshTarget>;
    /** The first master's node name. */
    nodeName: pulumi.Input<string>;
    /** The first master's address (API server advertise address). */
    address: pulumi.Input<string>;
    /** kube-apiserver's port on each master. */
    apiServerPort: pulumi.Input<number>;
    /** The control-plane endpoint, host:port. */
    endpoint: pulumi.Input<string>;
    /** Pod network CIDR. */
    podCidr: pulumi.Input<string>;
    /** Service CIDR. */
    serviceCidr: pulumi.Input<string>;
    /** Kubernetes version (must match the installed kubeadm). */
    kubernetesVersion: pulumi.Input<string>;
    /** CNI manifest URL. */
    cniManifest: pulumi.Input<string>;
    /** Proxy for fetching the CNI manifest. */
    proxy: pulumi.Input<NodeProxy>;
    /** Entire-cluster heal generation. */
    clusterGeneration: pulumi.Input<number>;
}

export class KubeadmInit extends StepResource {
    declare readonly endpoint: pulumi.Output<string>;
    declare readonly kubeconfig: pulumi.Output<string>;
    declare readonly joinToken: pulumi.Output<string>;
    declare readonly caCertHash: pulumi.Output<string>;

    constructor(name: string, args: KubeadmInitArgs, opts?: pulumi.CustomResourceOptions) {
        super(kubeadmInitProvider, kubeadmInitStep, name, args, opts, { outputs: ["kubeconfig", "joinToken", "caCertHash"] });
    }
}
