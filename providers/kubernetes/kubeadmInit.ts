/**
 * KubeadmInit: the cluster itself, created once by `kubeadm init` on the first master (its pod network is
 * a step of its own: podNetwork.ts).
 * Its outputs (admin kubeconfig, a join token valid for a day, the CA hash) are secret. Members join with
 * credentials they fetch fresh, so these outputs never go stale for them.
 *
 * The cluster outlives its first VM (an HA heal of master-0 keeps it), so the step has no session of its
 * own: it reaches the masters through `controlPlanes`, each pinned to the host key its KubernetesNode saw
 * last, so a healed master-0 is reached by its new key. Its Kubernetes version and image repository are
 * fixed (versionPin.ts).
 */
import * as pulumi from "@pulumi/pulumi";
import { StepPlan } from "../remoteActions";
import { Failure, StepDefinition } from "../step";
import { StepResource } from "../stepResource";
import { SshSession, SshTarget } from "../transport/ssh";
import { sh } from "../transport/shell";
import { clusterCaCertHash, ControlPlaneRef, initConfiguration, InitSettings, isImageRepository, joinCredentials, kubeadmInit, listsControlPlanes, nodeStatus, resetIfReachable } from "./kubeadm";
import { imageRepositoryChangeRefusal, versionChangeRefusal, VersionPinnedProvider } from "./versionPin";

interface KubeadmInitInputs extends InitSettings {
    [key: string]: unknown;
    /** Raising it re-creates the cluster (entire-cluster heal). */
    clusterGeneration: number;
    /** Every master, the first (where init runs) first, each with its pinned host key. */
    controlPlanes: ControlPlaneRef[];
}

interface KubeadmInitOutputs {
    [key: string]: unknown;
    kubeconfig: string;
    joinToken: string;
    caCertHash: string;
}

const INITIAL_TOKEN_TTL = "24h";

async function clusterOutputs(s: SshSession): Promise<KubeadmInitOutputs> {
    const { token, caCertHash } = await joinCredentials(s, false, INITIAL_TOKEN_TTL);
    const kubeconfig = (await s.exec(sh`cat /etc/kubernetes/admin.conf`, { sudo: true, quiet: true })).stdout;
    return { kubeconfig, joinToken: token, caCertHash };
}

const CIDR_RE = /^[0-9a-fA-F.:]+\/\d{1,3}$/;

export const kubeadmInitStep: StepDefinition<KubeadmInitInputs, KubeadmInitOutputs> = {
    kind: "KubeadmInit",
    version: "3",
    outputs: ["kubeconfig", "joinToken", "caCertHash"],
    replaceOn: ["endpoint", "podCidr", "serviceCidr", "clusterGeneration"],
    deleteBeforeReplace: true,
    deleteSucceedsWhenUnreachable: true,
    ownHost: false,
    validate(i): Failure[] {
        const failures: Failure[] = [];
        if (typeof i.endpoint !== "string" || !/^[0-9a-zA-Z.:-]+:\d+$/.test(i.endpoint)) failures.push({ property: "endpoint", reason: "must be host:port" });
        for (const key of ["podCidr", "serviceCidr"] as const) if (typeof i[key] !== "string" || !CIDR_RE.test(i[key] as string)) failures.push({ property: key, reason: "must be a CIDR" });
        if (i.certSans !== undefined && (!Array.isArray(i.certSans) || i.certSans.some((n) => typeof n !== "string" || !/^[0-9A-Za-z.:-]+$/.test(n)))) failures.push({ property: "certSans", reason: "must list IP addresses or DNS names" });
        if (i.imageRepository !== undefined && !isImageRepository(i.imageRepository)) failures.push({ property: "imageRepository", reason: "must be a registry host[:port] with an optional path" });
        if (!Number.isInteger(i.clusterGeneration) || (i.clusterGeneration as number) < 0) failures.push({ property: "clusterGeneration", reason: "must be a whole number ≥ 0" });
        const cps = i.controlPlanes;
        if (!listsControlPlanes(cps) || cps.length === 0 || (i.nodeName !== undefined && cps[0].name !== i.nodeName)) {
            failures.push({ property: "controlPlanes", reason: "must list every master as {name, connection}, the first master (nodeName) first" });
        }
        return failures;
    },
    id: (i) => `${i.connection.host}:kubeadm-init`,
    create: (_s, i, hosts) =>
        hosts.on(i.controlPlanes[0].connection, async (s) => {
            // A re-run after a failure half-way: the cluster is there, only its outputs are read again.
            if ((await nodeStatus(s, i.nodeName).catch(() => undefined)) === undefined) {
                await kubeadmInit(s, i);
                console.log(`[KubeadmInit ${i.nodeName}] control plane initialized at ${i.endpoint}`);
            }
            return clusterOutputs(s);
        }),
    async update(_s, olds, news) {
        // Check refuses this first (versionPin.ts); kept for a check that was skipped.
        if (olds.kubernetesVersion !== news.kubernetesVersion) throw new Error(versionChangeRefusal(olds.kubernetesVersion, news.kubernetesVersion));
        if (olds.imageRepository !== news.imageRepository) throw new Error(imageRepositoryChangeRefusal(olds.imageRepository, news.imageRepository));
        // Nothing else to do on the cluster: a master's new host key (a healed master) is only how it is reached.
        if (JSON.stringify(olds.certSans ?? []) !== JSON.stringify(news.certSans ?? [])) {
            console.log(`[KubeadmInit ${news.nodeName}] the API server certificate keeps the names it was made with; new names (${(news.certSans ?? []).join(", ") || "none"}) take a certificate renewal (kubeadm init phase certs apiserver) on each master`);
        }
        return { kubeconfig: olds.kubeconfig, joinToken: olds.joinToken, caCertHash: olds.caCertHash };
    },
    async delete() {
        // deleteAcross does the work.
    },
    async deleteAcross(hosts, outs) {
        // After an entire-cluster heal the first master is a new VM (another host key): nothing to reset there.
        const first = outs.controlPlanes[0];
        await resetIfReachable(hosts, "KubeadmInit", { nodeName: first.name, connection: first.connection });
    },
    async read(_s, outs, hosts) {
        const caCertHash = await clusterCaCertHash(hosts, outs.controlPlanes);
        return caCertHash === undefined ? undefined : { caCertHash };
    },
};

export const kubeadmInitProvider = new VersionPinnedProvider(kubeadmInitStep, { pinImageRepository: true });

export interface KubeadmInitArgs {
    /** The first master's login: identifies the step (it works through `controlPlanes`). */
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
    /** Registry (and path) of the control-plane, etcd, CoreDNS and pause images; left out, registry.k8s.io. */
    imageRepository?: pulumi.Input<string>;
    /** Entire-cluster heal generation. */
    clusterGeneration: pulumi.Input<number>;
    /** Extra names of the API server certificate (the VIP, the masters' floating IPs). */
    certSans?: pulumi.Input<pulumi.Input<string>[]>;
    /** Every master, the first first, each pinned to its current host key (secret: their logins). */
    controlPlanes: pulumi.Input<pulumi.Input<ControlPlaneRef>[]>;
}

const kubeadmInitPlan: StepPlan<KubeadmInitArgs> = (a, node) => [
    {
        when: ["create"],
        action: `kubeadm init on ${node} with the rendered InitConfiguration and ClusterConfiguration, certificates uploaded`,
        rendered: pulumi
            .all({ nodeName: a.nodeName, address: a.address, apiServerPort: a.apiServerPort, endpoint: a.endpoint, podCidr: a.podCidr, serviceCidr: a.serviceCidr, kubernetesVersion: a.kubernetesVersion, imageRepository: a.imageRepository, certSans: a.certSans })
            .apply((settings) => initConfiguration(settings as unknown as InitSettings)),
    },
    { when: ["delete"], action: `kubeadm reset ${node} when it is still the same machine`, rendered: { nodeName: a.nodeName } },
];

export class KubeadmInit extends StepResource {
    declare readonly endpoint: pulumi.Output<string>;
    declare readonly kubeconfig: pulumi.Output<string>;
    declare readonly joinToken: pulumi.Output<string>;
    declare readonly caCertHash: pulumi.Output<string>;

    constructor(name: string, args: KubeadmInitArgs, opts?: pulumi.CustomResourceOptions) {
        // The masters' logins: a secret input, whose stored output the engine keeps secret as well (annotateSecrets,
        // sdk/go/common/resource/plugin/provider_plugin.go: a dynamic provider does not accept secrets).
        const inputs = { ...args, controlPlanes: pulumi.secret(args.controlPlanes) };
        super(kubeadmInitProvider, kubeadmInitStep, kubeadmInitPlan, name, inputs, opts, { outputs: ["kubeconfig", "joinToken", "caCertHash"] });
    }
}
