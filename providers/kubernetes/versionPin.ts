/**
 * A running cluster keeps its Kubernetes version: changing it takes `kubeadm upgrade` (control plane first,
 * then node by node, drained), which these steps do not do. The node and init steps refuse a new
 * `kubernetesVersion` at check, before anything runs anywhere (and `pulumi preview` shows it), unless the
 * resource is replaced anyway: a new VM, or a new cluster (heal.generation).
 */
import { Failure, StepInputs, StepProvider } from "../step";

/** Why a version change is refused (the init step's update says the same, should check be bypassed). */
export function versionChangeRefusal(from: string, to: string): string {
    return (
        `kubernetes.version changed from ${from} to ${to}: a running cluster is not upgraded by k8s-vnf, and nothing was changed. ` +
        "Set it back, or heal the entire cluster (heal.generation) to re-create it at the new version"
    );
}

/** A step provider whose check refuses a new `kubernetesVersion` for a resource that would stay. */
export class VersionPinnedProvider<I extends StepInputs, C extends StepInputs = StepInputs> extends StepProvider<I, C> {
    async check(olds: Record<string, unknown>, news: Record<string, unknown>): Promise<{ inputs: Record<string, unknown>; failures: Failure[] }> {
        const checked = await super.check(olds, news);
        // The engine passes the old inputs (none for a new resource): what the last update was given.
        const from = olds.kubernetesVersion;
        const to = news.kubernetesVersion;
        const version = (v: unknown): v is string => typeof v === "string" && /^\d+\.\d+\.\d+$/.test(v);
        if (version(from) && version(to) && from !== to && this.replacesOf(olds, news).length === 0) {
            checked.failures.push({ property: "kubernetesVersion", reason: versionChangeRefusal(from, to) });
        }
        return checked;
    }
}
