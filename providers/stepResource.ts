/**
 * Program-side half of a step: the resource class every step's resource extends. It adds what every step
 * resource passes to `dynamic.Resource` besides its own inputs. (Kept apart from step.ts, whose code is
 * serialized into the state.)
 */
import * as pulumi from "@pulumi/pulumi";
import { CompleteProvider, packedProvider } from "./packedProvider";
import { registeredActions, StepPlan } from "./remoteActions";
import { StepDefinition, StepInputs } from "./step";
import { SshTarget } from "./transport/ssh";

/** Which of a step's properties hold credentials. */
export interface StepSecrets {
    /** Inputs passed as secrets and kept secret in the outputs (e.g. other hosts' logins). */
    inputs?: string[];
    /** Computed outputs that are secret (e.g. a kubeconfig). */
    outputs?: string[];
}

/**
 * The provider every step resource names: an explicit `pulumi-nodejs` provider without configuration, one per
 * program run. The engine hands the default `pulumi-nodejs` provider the stack's whole configuration
 * (pkg/resource/deploy/target.go GetPackageConfig: "for dynamic providers, we always pass the full
 * configuration"), so every config change (each heal and scale is one) updates that provider, and the
 * update closes the plugin instance the old configuration ran in (providers/registry.go Update,
 * setProviderAndCloseOld) while the deletes of a delete-first VM replacement, started earlier in the same
 * run, may still be using it: "grpc: the client connection is closing" (Pulumi v3.248.0). This one's inputs
 * never change, and the configuration's secrets stay out of its state. Steps read no configuration.
 */
const stepProviders = new WeakMap<object, pulumi.ProviderResource>();
const NO_MONITOR = {};
function stepProvider(): pulumi.ProviderResource {
    // One per engine connection: a program run has one monitor, and each `setMocks` makes a new one.
    const run = pulumi.runtime.getMonitor() ?? NO_MONITOR;
    let provider = stepProviders.get(run);
    if (!provider) stepProviders.set(run, (provider = new StepProvider("k8s-vnf-steps")));
    return provider;
}

class StepProvider extends pulumi.ProviderResource {
    constructor(name: string) {
        super("pulumi-nodejs", name, {});
    }
}

/**
 * A step's resource: its inputs plus the connection (secret: it holds credentials), the step's code
 * version and its plan of remote actions (remoteActions.ts); options every step needs: delete-first where two
 * copies cannot coexist, secret outputs. The provider goes in packed (packedProvider.ts).
 */
export abstract class StepResource extends pulumi.dynamic.Resource {
    declare readonly hostKeyFingerprint: pulumi.Output<string>;

    protected constructor(
        provider: CompleteProvider,
        def: StepDefinition<StepInputs, StepInputs>,
        // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each step's plan takes its own args type
        plan: StepPlan<any>,
        name: string,
        args: { connection: pulumi.Input<SshTarget> } & pulumi.Inputs,
        opts?: pulumi.CustomResourceOptions,
        secrets: StepSecrets = {},
    ) {
        const { connection, ...inputs } = args;
        for (const key of secrets.inputs ?? []) if (inputs[key] !== undefined) inputs[key] = pulumi.secret(inputs[key]);
        // The plan's action texts name the node where the step has one, else the resource (its digests never
        // depend on a credential: remoteActions.ts).
        const subject = typeof inputs.nodeName === "string" ? inputs.nodeName : name;
        inputs.remoteActions = registeredActions(plan({ ...inputs, connection: pulumi.secret(connection) }, subject), opts?.deletedWith);
        // Computed values are registered as undefined so the SDK creates their Outputs (see StepDefinition.outputs).
        const computed = Object.fromEntries([...def.outputs, "hostKeyFingerprint"].map((key) => [key, undefined]));
        super(
            packedProvider(def.kind, provider),
            name,
            { ...computed, ...inputs, connection: pulumi.secret(connection), providerVersion: def.version },
            pulumi.mergeOptions(opts, {
                provider: stepProvider(),
                deleteBeforeReplace: def.deleteBeforeReplace || undefined,
                additionalSecretOutputs: ["connection", ...(secrets.inputs ?? []), ...(secrets.outputs ?? [])],
            }),
            "k8s-vnf",
            def.kind,
        );
    }
}
