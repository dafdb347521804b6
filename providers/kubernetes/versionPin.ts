/**
 * A running cluster keeps its Kubernetes version: changing it takes `kubeadm upgrade` (control plane first,
 * then node by node, drained), which these steps do not do. The node and init steps refuse a new
 * `kubernetesVersion` at check, before anything runs anywhere (and `pulumi preview` shows it), unless the
 * resource is replaced anyway: a new VM, or a new cluster (heal.generation). The init step also keeps its
 * `imageRepository`: the control plane's static Pod manifests and kubeadm's stored ClusterConfiguration name it.
 */
import { Failure, StepDefinition, StepInputs, StepProvider } from "../step";
import { isImageRepository } from "./kubeadm";

/** Why a version change is refused (the init step's update says the same, should check be bypassed). */
export function versionChangeRefusal(from: string, to: string): string {
    return (
        `kubernetes.version changed from ${from} to ${to}: a running cluster is not upgraded by k8s-vnf, and nothing was changed. ` +
        "Set it back, or heal the entire cluster (heal.generation) to re-create it at the new version"
    );
}

/** Why a change of the image repository is refused for a running cluster. */
export function imageRepositoryChangeRefusal(from: string | undefined, to: string | undefined): string {
    return (
        `kubernetes.imageRepository changed from ${from ?? "registry.k8s.io (the default)"} to ${to ?? "registry.k8s.io (the default)"}: ` +
        "a running cluster's control plane keeps the images it was made with, and nothing was changed. " +
        "Set it back, or heal the entire cluster (heal.generation) to re-create it from the new repository"
    );
}

/**
 * A step provider whose check refuses a new `kubernetesVersion` for a resource that would stay, and a new
 * `imageRepository` too when `pinImageRepository`. With `unsetVersion`, no version is one too (an installer's
 * default, so named in the refusal), and a version given or left out where it was not is a change.
 */
export class VersionPinnedProvider<I extends StepInputs, C extends StepInputs = StepInputs> extends StepProvider<I, C> {
    private readonly pinsImageRepository: boolean;
    private readonly unsetVersion?: string;

    constructor(def: StepDefinition<I, C>, options: { pinImageRepository?: boolean; unsetVersion?: string } = {}) {
        super(def);
        this.pinsImageRepository = options.pinImageRepository ?? false;
        this.unsetVersion = options.unsetVersion;
    }

    async check(olds: Record<string, unknown>, news: Record<string, unknown>): Promise<{ inputs: Record<string, unknown>; failures: Failure[] }> {
        const checked = await super.check(olds, news);
        // The engine passes the old inputs (none for a new resource): what the last update was given.
        const from = olds.kubernetesVersion;
        const to = news.kubernetesVersion;
        const unset = this.unsetVersion;
        const version = (v: unknown): v is string | undefined => (typeof v === "string" && /^\d+\.\d+\.\d+$/.test(v)) || (unset !== undefined && v === undefined);
        // A new resource has no old connection: replacesOf names it, so nothing is pinned yet.
        const stays = version(from) && this.replacesOf(olds, news).length === 0;
        if (stays && version(to) && from !== to) {
            checked.failures.push({ property: "kubernetesVersion", reason: versionChangeRefusal(from ?? unset!, to ?? unset!) });
        }
        const repository = (v: unknown): v is string | undefined => v === undefined || isImageRepository(v);
        if (this.pinsImageRepository && stays && repository(olds.imageRepository) && repository(news.imageRepository) && olds.imageRepository !== news.imageRepository) {
            checked.failures.push({ property: "imageRepository", reason: imageRepositoryChangeRefusal(olds.imageRepository, news.imageRepository) });
        }
        return checked;
    }
}
