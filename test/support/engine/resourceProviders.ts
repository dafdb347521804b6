/**
 * The providers a run calls: dynamic resources through the real dynamic-provider host (the provider code each
 * carries in `__provider`, plaintext: the host answers Configure with `acceptSecrets: false`), OpenStack
 * resources through the lab's stand-in. Answers come back with secretness as the engine gives it
 * (`annotateSecrets`, sdk/go/common/resource/plugin/provider_plugin.go: by property name, an output is secret
 * when its input contained a secret).
 */
import { ProviderHost } from "../providerHost";
import { LabCloud } from "./labCloud";
import { containsSecret, DiffAnswer, plain, secretValue } from "./stepRules";
import { ResourceState } from "./state";

type Props = Record<string, unknown>;

export const isDynamic = (type: string) => type.startsWith("pulumi-nodejs:dynamic");

export class ResourceProviders {
    private host?: Promise<ProviderHost>;

    constructor(
        private readonly cloud: LabCloud,
        private readonly config: Record<string, string>,
        private readonly env: Record<string, string>,
        /** Each line the provider host prints (a provider's console output reaches the CLI as diagnostics). */
        private readonly onLine: (line: string) => void,
    ) {}

    /** Check: `olds` are the old inputs of an existing resource, undefined for a new one or a re-creation. */
    async check(r: ResourceState, olds: Props | undefined): Promise<{ inputs: Props; failures: { property: string; reason: string }[] }> {
        if (!isDynamic(r.type)) return { inputs: r.inputs, failures: [] };
        const { inputs, failures } = await (await this.dynamic()).check(olds ? (plain(olds) as Props) : {}, plain(r.inputs) as Props);
        return { inputs: rewrap(r.inputs, inputs), failures };
    }

    async diff(old: ResourceState, inputs: Props): Promise<DiffAnswer> {
        if (!isDynamic(old.type)) return this.cloud.diff(old.type, old.inputs, inputs);
        return (await this.dynamic()).diff(old.id, plain(old.outputs) as Props, plain(inputs) as Props);
    }

    async create(r: ResourceState): Promise<{ id: string; outputs: Props }> {
        const { id, outputs } = isDynamic(r.type)
            ? await (await this.dynamic()).create(plain(r.inputs) as Props).then((c) => ({ id: c.id, outputs: c.outs }))
            : await this.cloud.create(r.type, r.urn, plain(r.inputs) as Props);
        return { id, outputs: rewrap(r.inputs, outputs) };
    }

    async update(old: ResourceState, inputs: Props): Promise<Props> {
        const outputs = isDynamic(old.type)
            ? await (await this.dynamic()).update(old.id, plain(old.outputs) as Props, plain(inputs) as Props)
            : await this.cloud.update(old.type, old.id, plain(old.outputs) as Props, plain(inputs) as Props);
        return rewrap(inputs, outputs);
    }

    async delete(r: ResourceState): Promise<void> {
        if (!r.custom || r.retainOnDelete) return;
        if (isDynamic(r.type)) await (await this.dynamic()).delete(r.id, plain(r.outputs) as Props);
        else await this.cloud.delete(r.type, r.id, plain(r.outputs) as Props);
    }

    /** Refresh: the outputs as found, or undefined when the resource is gone. */
    async read(r: ResourceState): Promise<Props | undefined> {
        const found = isDynamic(r.type)
            ? await (await this.dynamic()).read(r.id, plain(r.outputs) as Props).then((x) => ({ id: x.id, outputs: x.props }))
            : await this.cloud.read(r.type, r.id, plain(r.outputs) as Props);
        return found.id ? rewrap(r.outputs, found.outputs) : undefined;
    }

    async stop(): Promise<void> {
        if (this.host) (await this.host).stop();
    }

    private dynamic(): Promise<ProviderHost> {
        this.host ??= ProviderHost.forEngine(this.config, { ...process.env, ...this.env }).then((h) => {
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
