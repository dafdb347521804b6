/**
 * The test engine's public surface: what test/support/labStack.ts calls for the engine's lab suite and bench. One
 * call is one `pulumi up` / `destroy` / `refresh` of a stack: the real program (`index.ts`) runs
 * in a process of its own, as under the Node language host, and every resource it registers becomes a step
 * decided by Pulumi's own rules (see stepRules.ts), run through the real dynamic-provider host or answered
 * from the lab (OpenStack). State is kept in `stateFile` between calls.
 */

/** One engine event as the Pulumi CLI writes it to `--event-log` (sdk/go/common/apitype/events.go). */
export type EngineEventJson = Record<string, unknown> & { sequence: number; timestamp: number };

export interface StackRun {
    /** The project folder (Pulumi.yaml, index.ts, node_modules). */
    projectDir: string;
    /** Stack name (`pulumi.getStack()` in the program). */
    stack: string;
    /** The stack's checkpoint (JSON); created when missing. */
    stateFile: string;
    /**
     * The config map as the CLI hands it to the language host (`PULUMI_CONFIG`): `k8s-vnf:masters` → its
     * value as text (objects and arrays as JSON), secrets decrypted.
     */
    config: Record<string, string>;
    /** Which of `config`'s keys are secret (`PULUMI_CONFIG_SECRET_KEYS`). */
    secretKeys: string[];
    /** Extra environment for the program and the provider host (e.g. `OS_*`). */
    env?: Record<string, string>;
    /** The lab answering OpenStack resources: the descriptor file a `Lab` writes (`Lab.descriptorFile`). */
    labDescriptor: string;
    /** Called for each server the lab starts (a test playing Nova's scheduler); in-process runs only. */
    onServer?: (server: { id: string; name: string; address: string }) => void;
    /** Engine events, in the CLI's JSON shape. */
    onEvent?: (event: EngineEventJson) => void;
    /** Progress text, as the CLI prints it (one line per call). */
    onOutput?: (line: string) => void;
}

export interface UpOptions {
    /** URNs to replace whatever their diff says (`--replace`). */
    replace?: string[];
    /** How many resource operations may run at once (`--parallel`); default as the CLI's. */
    parallel?: number;
}

export interface RefreshOptions {
    /** Only these URNs are read (`pulumi refresh --target`). */
    targets?: string[];
}

export type StepOp = "same" | "create" | "update" | "replace" | "delete" | "refresh" | "read";

export interface RunResult {
    /** The stack outputs, with their secretness. */
    outputs: Record<string, { value: unknown; secret: boolean }>;
    /** How many resources each kind of step touched (`summaryEvent.resourceChanges`). */
    changes: Partial<Record<StepOp, number>>;
}

/** Thrown when a run fails: `message` is what the CLI would print after `error:`. */
export class EngineRunError extends Error {
    constructor(message: string) {
        super(message);
        this.message = message;
        this.name = "EngineRunError";
    }
}
