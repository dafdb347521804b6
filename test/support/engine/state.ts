/**
 * The test engine's checkpoint: the resources of a stack as Pulumi's state holds them
 * (sdk/go/common/resource/resource_state.go), in registration (topological) order, kept in a JSON file.
 */
import * as fs from "node:fs";
import * as path from "node:path";

export interface ResourceState {
    urn: string;
    type: string;
    custom: boolean;
    /** Provider-assigned id (custom resources). */
    id: string;
    parent: string;
    /** Inputs as checked by the provider; secret values kept in their wrapper. */
    inputs: Record<string, unknown>;
    /** Outputs; secret values kept in their wrapper. */
    outputs: Record<string, unknown>;
    dependencies: string[];
    propertyDependencies: Record<string, string[]>;
    /** The resource option, when set. */
    deleteBeforeReplace?: boolean;
    replacementTrigger: unknown;
    additionalSecretOutputs: string[];
    deletedWith: string;
    retainOnDelete: boolean;
}

export interface Checkpoint {
    resources: ResourceState[];
    /** The stack's outputs (the root stack resource's). */
    outputs: Record<string, unknown>;
}

export function loadCheckpoint(file: string): Checkpoint {
    if (!fs.existsSync(file)) return { resources: [], outputs: {} };
    return JSON.parse(fs.readFileSync(file, "utf8")) as Checkpoint;
}

/** Written atomically: a crash mid-write leaves the previous checkpoint. */
export function saveCheckpoint(file: string, checkpoint: Checkpoint): void {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(checkpoint, null, 1), { mode: 0o600 });
    fs.renameSync(tmp, file);
}
