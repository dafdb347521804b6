/**
 * The test engine: `up`, `preview`, `destroy` and `refresh` of a stack of this project, the real program driving lab
 * hosts. See api.ts for the contract and deployment.ts for how a run goes.
 */
import { Lab } from "../../lab/lab";
import { RefreshOptions, RunResult, StackRun, UpOptions } from "./api";
import { Deployment } from "./deployment";
import { LabCloud } from "./labCloud";

export * from "./api";

function deployment(run: StackRun, dryRun = false): Deployment {
    return new Deployment(run, new LabCloud(Lab.attach(run.labDescriptor), run.stack, run.onServer), dryRun);
}

export function up(run: StackRun, options: UpOptions = {}): Promise<RunResult> {
    return deployment(run, !!options.preview).up(options);
}

/**
 * `pulumi preview`: the steps an update would take, as events (`planning: true`, `summaryEvent.isPreview`);
 * no provider creates, updates or deletes anything and the checkpoint is not written. `outputs` is the stack
 * outputs as the preview saw them (unknowns as the sentinel).
 */
export function preview(run: StackRun, options: Omit<UpOptions, "preview"> = {}): Promise<RunResult> {
    return deployment(run, true).up({ ...options, preview: true });
}

/** `pulumi destroy --preview-only`: every resource's delete step, dependents first, as events; nothing deleted. */
export function previewDestroy(run: StackRun): Promise<RunResult> {
    return deployment(run, true).destroy();
}

export function destroy(run: StackRun): Promise<RunResult> {
    return deployment(run).destroy();
}

export function refresh(run: StackRun, options: RefreshOptions = {}): Promise<RunResult> {
    return deployment(run).refresh(options);
}
