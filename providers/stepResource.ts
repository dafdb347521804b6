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
                deleteBeforeReplace: def.deleteBeforeReplace || undefined,
                additionalSecretOutputs: ["connection", ...(secrets.inputs ?? []), ...(secrets.outputs ?? [])],
            }),
            "k8s-vnf",
            def.kind,
        );
    }
}
