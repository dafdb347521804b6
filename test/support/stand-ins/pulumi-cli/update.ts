/**
 * `pulumi up`, `destroy` and `refresh` as the CLI runs them (v3.248.0, pkg/cmd/pulumi/operations/up.go and
 * neighbours): the stack must exist; its config is decrypted, merged with the project's defaults and
 * checked against Pulumi.yaml's types ("validating stack config: …") before anything runs; the update then
 * holds the stack's lock (a second update is refused, a killed one leaves it behind); SIGINT is the
 * graceful cancel. The program itself runs through the test engine (test/support/engine), against the lab
 * named by `K8S_VNF_LAB`; its events go to `--event-log`, its output to stdout, its stack outputs to the
 * state (outputs.ts) and an update summary to the stack's history.
 */
import type { EngineEventJson, RunResult, StackRun } from "../../engine";
import { DiyBackend } from "./backend";
import { openEventLog } from "./eventLog";
import { saveOutputs } from "./outputs";
import { Crypter } from "./passphrase";
import { delayFor, recordUpdateEnvironment, takePlantedFailure } from "./knobs";
import { mergeAndValidate, Project } from "./project";
import { StackConfigFile } from "./stackConfig";

export type UpdateKind = "update" | "destroy" | "refresh";

export interface UpdateRequest {
    kind: UpdateKind;
    project: Project;
    backend: DiyBackend;
    stack: string;
    replace: string[];
    eventLog?: string;
}

/** The config map the CLI hands the language host: values as text (maps and lists as JSON), secrets decrypted. */
export function programConfig(project: Project, stack: string, file: StackConfigFile, crypter: Crypter): { config: Record<string, string>; secretKeys: string[] } {
    let merged;
    try {
        merged = mergeAndValidate(project, stack, file.values(crypter));
    } catch (e) {
        throw new Error(`validating stack config: ${(e as Error).message}`);
    }
    const config: Record<string, string> = {};
    for (const [key, v] of merged) config[key] = typeof v.value === "string" ? v.value : v.value !== null && typeof v.value === "object" ? JSON.stringify(v.value) : String(v.value);
    return { config, secretKeys: [...merged].filter(([, v]) => v.secret).map(([k]) => k) };
}

/** What every engine run of the stand-in takes: the stack, its checkpoint and config, the lab it runs on. */
export function labRun(project: Project, backend: DiyBackend, stack: string, program: { config: Record<string, string>; secretKeys: string[] }): Omit<StackRun, "onEvent" | "onOutput" | "signal"> {
    const labDescriptor = process.env.K8S_VNF_LAB;
    if (!labDescriptor) throw new Error("the stand-in Pulumi CLI runs the program against lab hosts: set K8S_VNF_LAB to a lab's descriptor file (test/lab/lab.ts)");
    return {
        projectDir: project.dir,
        stack,
        stateFile: backend.checkpointFile(stack),
        ...program,
        env: Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined)),
        labDescriptor,
    };
}

export async function runUpdate(request: UpdateRequest): Promise<void> {
    const { kind, project, backend, stack } = request;
    backend.requireStack(stack);
    const file = StackConfigFile.load(project, stack);
    const crypter = file.crypter(process.env);
    const { config, secretKeys } = programConfig(project, stack, file, crypter);
    file.save();

    const unlock = backend.lock(stack);
    recordUpdateEnvironment();
    const started = new Date();
    const log = openEventLog(request.eventLog);
    let sequence = 0;
    const emit = (event: Record<string, unknown>) => log.write({ sequence: sequence++, timestamp: Math.floor(Date.now() / 1000), ...event });
    // The CLI's signal handler exists only while the update applies, after the lock is taken
    // (pkg/backend/cancellation_scope.go): the first SIGINT cancels gracefully.
    const cancel = new AbortController();
    process.on("SIGINT", () => {
        emit({ stdoutEvent: { message: "^C received; cancelling. If you would like to terminate immediately, press ^C again.\n", color: "never" } });
        cancel.abort();
    });
    let result: RunResult | undefined;
    let failure: Error | undefined;
    try {
        await delayFor(kind === "update" ? "up" : kind, cancel.signal);
        const planted = takePlantedFailure();
        if (cancel.signal.aborted) throw new Error(`${kind} canceled`);
        if (planted) {
            emit({ diagnosticEvent: { message: `${planted}\n`, color: "never", severity: "error" } });
            emit({ summaryEvent: { maybeCorrupt: false, durationSeconds: 0, resourceChanges: {}, PolicyPacks: {}, isPreview: false, result: "failed" } });
            throw new Error(planted);
        }
        const run: StackRun = {
            ...labRun(project, backend, stack, { config, secretKeys }),
            // The engine's own sequence numbers are kept; its cancel event is sent last (below), as the
            // engine's deferred NewCancelEvent is (pkg/engine/update.go), and ends the stream.
            onEvent: (event: EngineEventJson) => {
                sequence = event.sequence + 1;
                if (!("cancelEvent" in event)) log.write(event);
            },
            onOutput: (line: string) => process.stdout.write(`${line}\n`),
            signal: cancel.signal,
        };
        // Loaded only for an update: the engine brings the SDK, gRPC and the lab with it.
        const engine = await import("../../engine");
        result = kind === "update" ? await engine.up(run, { replace: request.replace }) : kind === "destroy" ? await engine.destroy(run) : await engine.refresh(run);
        saveOutputs(backend.outputsFile(stack), result.outputs, crypter);
    } catch (e) {
        failure = e as Error;
    } finally {
        emit({ cancelEvent: {} });
        await log.close();
        unlock();
        backend.addHistory(stack, {
            version: 1,
            kind,
            startTime: started.toISOString(),
            endTime: new Date().toISOString(),
            message: "",
            environment: {},
            config: {},
            result: failure ? "failed" : "succeeded",
            resourceChanges: result?.changes ?? {},
        });
    }
    if (failure) throw failure;
}
