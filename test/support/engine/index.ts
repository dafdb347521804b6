/**
 * The test engine: `up`, `destroy` and `refresh` of a stack of this project, the real program driving lab
 * hosts. See api.ts for the contract and deployment.ts for how a run goes. Previews are not modelled: the
 * suites that run them use the real CLI.
 */
import { Lab } from "../../lab/lab";
import { RefreshOptions, RunResult, StackRun, UpOptions } from "./api";
import { Deployment } from "./deployment";
import { LabCloud } from "./labCloud";

export * from "./api";

function deployment(run: StackRun): Deployment {
    return new Deployment(run, new LabCloud(Lab.attach(run.labDescriptor), run.stack, run.onServer));
}

export function up(run: StackRun, options: UpOptions = {}): Promise<RunResult> {
    return deployment(run).up(options);
}

export function destroy(run: StackRun): Promise<RunResult> {
    return deployment(run).destroy();
}

export function refresh(run: StackRun, options: RefreshOptions = {}): Promise<RunResult> {
    return deployment(run).refresh(options);
}
