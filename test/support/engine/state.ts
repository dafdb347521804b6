/**
 * The test engine's checkpoint: the resources of a stack as Pulumi's state holds them
 * (sdk/go/common/resource/resource_state.go), in a topological order, kept in a JSON file and rewritten after
 * every step as the CLI saves its snapshot (pkg/backend/snapshot.go).
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
    /** An explicit provider, as `<provider urn>::<provider id>` (the SDK's `provider` option). */
    provider?: string;
    /** Deleted for a delete-first replacement whose new copy does not exist yet (`State.PendingReplacement`). */
    pendingReplacement?: boolean;
    /** An old copy replaced create-first, deleted at the end of the next run that gets that far (`State.Delete`). */
    delete?: boolean;
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
function saveCheckpoint(file: string, checkpoint: Checkpoint): void {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(checkpoint, null, 1), { mode: 0o600 });
    fs.renameSync(tmp, file);
}

/**
 * The state of one run: the previous checkpoint, what this run recorded, removed and marked. What it
 * writes is the new copies in the order they were recorded, then the old entries still standing.
 */
export class RunState {
    readonly olds: Checkpoint;
    /** Resources recorded by this run, in order. */
    private readonly news: ResourceState[] = [];
    /** Old entries gone from the state (deleted, or dropped by a refresh). */
    private readonly removed = new Set<ResourceState>();
    outputs: Record<string, unknown>;

    constructor(private readonly file: string) {
        this.olds = loadCheckpoint(file);
        // A failed run keeps the stack's outputs (step_executor.go: finalizing stack outputs on error).
        this.outputs = { ...this.olds.outputs };
    }

    /** The live old entry of `urn` (not an old copy awaiting deletion, not removed). */
    old(urn: string): ResourceState | undefined {
        return this.olds.resources.find((r) => r.urn === urn && !r.delete && !this.removed.has(r));
    }

    /** Old copies replaced create-first by an earlier run, still to delete. */
    pendingDeletes(): ResourceState[] {
        return this.olds.resources.filter((r) => r.delete && !this.removed.has(r));
    }

    /** Old entries no step of this run has touched, with `touched` the URNs that had one. */
    untouched(touched: Set<string>): ResourceState[] {
        return this.olds.resources.filter((r) => !r.delete && !touched.has(r.urn) && !this.removed.has(r));
    }

    isRemoved(r: ResourceState): boolean {
        return this.removed.has(r);
    }

    /** A new copy of a resource; a pending-replacement old entry of the same URN goes with it. */
    record(r: ResourceState): void {
        this.news.push(r);
        this.save();
    }

    remove(r: ResourceState): void {
        this.removed.add(r);
        const i = this.news.indexOf(r);
        if (i >= 0) this.news.splice(i, 1);
        this.save();
    }

    /** Marks an old entry, kept in the state (pending replacement, or an old copy to delete later). */
    mark(r: ResourceState, flag: "pendingReplacement" | "delete"): void {
        r[flag] = true;
        this.save();
    }

    /** Every resource of the state as it stands: the new copies, then the old entries not superseded. */
    resources(): ResourceState[] {
        const superseded = (r: ResourceState) => !r.delete && this.news.some((n) => n.urn === r.urn);
        return [...this.news, ...this.olds.resources.filter((r) => !this.removed.has(r) && !superseded(r))];
    }

    save(): void {
        saveCheckpoint(this.file, { resources: this.resources(), outputs: this.outputs });
    }
}
