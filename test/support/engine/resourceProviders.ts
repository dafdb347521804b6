/**
 * The providers a run calls: dynamic resources through the real dynamic-provider host (the provider code each
 * carries in `__provider`, plaintext: the host answers Configure with `acceptSecrets: false`), OpenStack
 * resources through the lab's stand-in, the Kubernetes provider and its objects through its stand-in (with the
 * kubeconfig of the provider resource each object names). Answers come back with secretness as the engine gives it
 * (`annotateSecrets`, sdk/go/common/resource/plugin/provider_plugin.go: by property name, an output is secret
 * when its input contained a secret).
 */
import { randomUUID } from "node:crypto";
import { ProviderHost } from "../providerHost";
import { KUBERNETES_PROVIDER, KubernetesStandIn } from "./kubernetesStandIn";
import { LabCloud } from "./labCloud";
import { containsSecret, DiffAnswer, plain, secretValue } from "./stepRules";
import { ResourceState } from "./state";

type Props = Record<string, unknown>;

export const isDynamic = (type: string) => type.startsWith("pulumi-nodejs:dynamic");
/** The program's explicit provider of its dynamic resources (providers/stepResource.ts). */
export const DYNAMIC_PROVIDER = "pulumi:providers:pulumi-nodejs";
/** Provider resources the test engine serves: Configure only, their outputs their inputs. */
const isProviderResource = (type: string) => type === KUBERNETES_PROVIDER || type === DYNAMIC_PROVIDER;
const isKubernetesObject = (type: string) => type.startsWith("kubernetes:");

export class ResourceProviders {
    private host?: Promise<ProviderHost>;

    constructor(
        private readonly cloud: LabCloud,
        private readonly kubernetes: KubernetesStandIn,
        private readonly env: Record<string, string>,
        /** Each line the provider host prints (a provider's console output reaches the CLI as diagnostics). */
        private readonly onLine: (line: string) => void,
        /** The inputs of the provider resource a reference names. */
        private readonly providerInputs: (reference: string) => Props,
    ) {}

    /** Check: `olds` are the old inputs of an existing resource, undefined for a new one or a re-creation. */
    async check(r: ResourceState, olds: Props | undefined): Promise<{ inputs: Props; failures: { property: string; reason: string }[] }> {
        if (isKubernetesObject(r.type)) return { inputs: this.kubernetes.check(r.type, r.urn, r.inputs), failures: [] };
        if (!isDynamic(r.type)) return { inputs: r.inputs, failures: [] };
        const { inputs, failures } = await (await this.dynamic()).check(olds ? (plain(olds) as Props) : {}, plain(r.inputs) as Props);
        return { inputs: rewrap(r.inputs, inputs), failures };
    }

    async diff(old: ResourceState, inputs: Props): Promise<DiffAnswer> {
        if (old.type === KUBERNETES_PROVIDER) return this.kubernetes.diffConfig(old.inputs, inputs);
        // The dynamic-provider host does not implement DiffConfig (sdk/nodejs/cmd/dynamic-provider: UNIMPLEMENTED),
        // so the registry compares the old outputs with the new inputs (providers/registry.go Diff).
        if (old.type === DYNAMIC_PROVIDER) return { changes: JSON.stringify(plain(old.outputs)) === JSON.stringify(plain(inputs)) ? "none" : "some", replaces: [], deleteBeforeReplace: false };
        if (isKubernetesObject(old.type)) return this.kubernetes.diff(old.type, old.inputs, inputs);
        if (!isDynamic(old.type)) return this.cloud.diff(old.type, old.inputs, inputs);
        return (await this.dynamic()).diff(old.id, plain(old.outputs) as Props, plain(inputs) as Props);
    }

    async create(r: ResourceState): Promise<{ id: string; outputs: Props }> {
        // Configure: a provider resource's outputs are its inputs; its id is new with every copy.
        if (isProviderResource(r.type)) return { id: randomUUID(), outputs: r.inputs };
        if (isKubernetesObject(r.type)) {
            const created = await this.kubernetes.create(r.type, this.kubeconfigOf(r), r.inputs);
            return { id: created.id, outputs: rewrap(r.inputs, created.outputs) };
        }
        const { id, outputs } = isDynamic(r.type)
            ? await (await this.dynamic()).create(plain(r.inputs) as Props).then((c) => ({ id: c.id, outputs: c.outs }))
            : await this.cloud.create(r.type, r.urn, plain(r.inputs) as Props);
        return { id, outputs: rewrap(r.inputs, outputs) };
    }

    async update(old: ResourceState, inputs: Props): Promise<Props> {
        if (isProviderResource(old.type)) return inputs;
        if (isKubernetesObject(old.type)) return rewrap(inputs, await this.kubernetes.update(old.type, this.kubeconfigOf(old), old.id, inputs));
        const outputs = isDynamic(old.type)
            ? await (await this.dynamic()).update(old.id, plain(old.outputs) as Props, plain(inputs) as Props)
            : await this.cloud.update(old.type, old.id, plain(old.outputs) as Props, plain(inputs) as Props);
        return rewrap(inputs, outputs);
    }

    async delete(r: ResourceState): Promise<void> {
        if (!r.custom || r.retainOnDelete || isProviderResource(r.type)) return;
        if (isKubernetesObject(r.type)) {
            const deleteUnreachable = String(plain(this.providerInputs(r.provider!).deleteUnreachable)) === "true";
            return this.kubernetes.delete(r.type, { kubeconfig: this.kubeconfigOf(r), deleteUnreachable }, r.id);
        }
        if (isDynamic(r.type)) await (await this.dynamic()).delete(r.id, plain(r.outputs) as Props);
        else await this.cloud.delete(r.type, r.id, plain(r.outputs) as Props);
    }

    /** Refresh: the outputs as found, or undefined when the resource is gone. */
    async read(r: ResourceState): Promise<Props | undefined> {
        if (isProviderResource(r.type)) return r.outputs;
        if (isKubernetesObject(r.type)) {
            const live = this.kubernetes.read(r.type, this.kubeconfigOf(r), r.id);
            return live && rewrap(r.outputs, live);
        }
        const found = isDynamic(r.type)
            ? await (await this.dynamic()).read(r.id, plain(r.outputs) as Props).then((x) => ({ id: x.id, outputs: x.props }))
            : await this.cloud.read(r.type, r.id, plain(r.outputs) as Props);
        return found.id ? rewrap(r.outputs, found.outputs) : undefined;
    }

    async stop(): Promise<void> {
        if (this.host) (await this.host).stop();
    }

    private kubeconfigOf(r: ResourceState): string {
        if (!r.provider) throw new Error(`${r.urn}: the test engine has no default Kubernetes provider; give the resource an explicit one`);
        return String(plain(this.providerInputs(r.provider).kubeconfig) ?? "");
    }

    private dynamic(): Promise<ProviderHost> {
        // Configured as the program's explicit provider of its steps is: with its inputs, none (stepResource.ts).
        this.host ??= ProviderHost.forEngine({}, { ...process.env, ...this.env }).then((h) => {
            let buffered = "";
            h.onOutput = (text) => {
                buffered += text;
                const lines = buffered.split("\n");
                buffered = lines.pop()!;
                for (const line of lines) this.onLine(line);
            };
            return h;
        });
        return this.host;
    }
}

/** A provider's answer with each key secret whose input contained a secret. */
function rewrap(inputs: Props, answer: Props): Props {
    return Object.fromEntries(Object.entries(answer).map(([k, v]) => [k, containsSecret(inputs[k]) ? secretValue(plain(v)) : v]));
}
