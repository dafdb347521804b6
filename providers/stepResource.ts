/**
 * Program-side helpers for step resources: what every step resource passes to `dynamic.Resource` besides
 * its own inputs. (Kept apart from step.ts, whose code is serialized into the state.)
 */
import * as pulumi from "@pulumi/pulumi";
import { StepDefinition, StepInputs } from "./step";
import { SshTarget } from "./transport/ssh";

/** The connection (secret: it holds credentials) and the step's code version, added to its inputs. */
export function stepProps<I extends StepInputs>(def: StepDefinition<I, any>, connection: pulumi.Input<SshTarget>, inputs: pulumi.Inputs): pulumi.Inputs {
    return { ...inputs, connection: pulumi.secret(connection), providerVersion: def.version, hostKeyFingerprint: undefined };
}

/** Resource options every step needs: delete-first where two copies cannot coexist, secret outputs. */
export function stepOptions(def: StepDefinition<any, any>, opts: pulumi.CustomResourceOptions | undefined, secretOutputs: string[] = []): pulumi.CustomResourceOptions {
    return pulumi.mergeOptions(opts, {
        deleteBeforeReplace: def.deleteBeforeReplace || undefined,
        additionalSecretOutputs: ["connection", ...secretOutputs],
    });
}
