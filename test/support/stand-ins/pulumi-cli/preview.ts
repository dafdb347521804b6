/**
 * `pulumi preview` as the CLI runs it against a diy backend (v3.248.0, pkg/cmd/pulumi/operations/preview.go;
 * pkg/backend/diy/backend.go `Preview`: straight to `apply` with DryRun): the stack must exist; its config
 * (the stack's file, or `--config-file`'s, with that file's own salt) is decrypted, merged and validated as
 * for `up`; then the program runs through the test engine as a preview. A preview takes no lock, writes no
 * checkpoint, no outputs and no history. Its events go to `--event-log` as `up`'s do; stdout shows the
 * progress rows, the `--diff` view or the `--json` digest (previewDisplay.ts). `--expect-no-changes` fails a
 * preview that proposes changes (preview.go: `backenderr.NoChangesExpectedError{Operation: "preview"}`).
 */
import * as path from "node:path";
import type { EngineEventJson, StackRun } from "../../engine";
import { DiyBackend } from "./backend";
import { openEventLog } from "./eventLog";
import { Project } from "./project";
import { DisplayType, PreviewDisplay } from "./previewDisplay";
import { StackConfigFile } from "./stackConfig";
import { labRun, programConfig } from "./update";

export interface PreviewRequest {
    project: Project;
    backend: DiyBackend;
    stack: string;
    replace: string[];
    eventLog?: string;
    configFile?: string;
    display: DisplayType;
    showSames: boolean;
    showReplacementSteps: boolean;
    expectNoChanges: boolean;
    /** `pulumi destroy --preview-only` (destroy.go): what a destroy would delete, previewed the same way. */
    destroy?: boolean;
}

/** `engine.HasChanges` (pkg/engine/update.go): any count but same and the reads. */
const hasChanges = (changes: Record<string, number>) => Object.entries(changes).some(([op, n]) => !["same", "read", "discard", "read-replacement"].includes(op) && n > 0);

export async function runPreview(request: PreviewRequest): Promise<void> {
    const { project, backend, stack } = request;
    backend.requireStack(stack);
    const file = request.configFile ? StackConfigFile.loadFile(path.resolve(request.configFile)) : StackConfigFile.load(project, stack);
    const hadSalt = file.existed && file.raw("encryptionsalt") !== undefined;
    const crypter = file.crypter(process.env);
    const { config, secretKeys } = programConfig(project, stack, file, crypter);
    // A new secrets manager's salt is kept in the file it belongs to (SaveProjectStack, stack/io.go).
    if (!hadSalt) file.save();

    const out = (text: string) => process.stdout.write(text);
    const err = (text: string) => process.stderr.write(text);
    const display = new PreviewDisplay({ type: request.display, showSames: request.showSames, showReplacementSteps: request.showReplacementSteps }, out, err);
    // diy backend.go `apply`: the banner, unless --json.
    if (request.display !== "json") out(`Previewing ${request.destroy ? "destroy" : "update"} (${stack}):\n`);

    const log = openEventLog(request.eventLog);
    let sequence = 0;
    let changes: Record<string, number> = {};
    let failure: Error | undefined;
    try {
        const run: StackRun = {
            ...labRun(project, backend, stack, { config, secretKeys }),
            onEvent: (event: EngineEventJson) => {
                sequence = event.sequence + 1;
                if ("cancelEvent" in event) return;
                log.write(event);
                display.event(event);
                if (event.summaryEvent) changes = (event.summaryEvent as { resourceChanges: Record<string, number> }).resourceChanges;
            },
            onOutput: (line: string) => display.diagnosticLine(line),
        };
        const engine = await import("../../engine");
        await (request.destroy ? engine.previewDestroy(run) : engine.preview(run, { replace: request.replace }));
    } catch (e) {
        failure = e as Error;
    } finally {
        log.write({ sequence: sequence++, timestamp: Math.floor(Date.now() / 1000), cancelEvent: {} });
        await log.close();
    }
    if (request.display === "json") out(display.json());
    if (failure) throw failure;
    if (request.expectNoChanges && hasChanges(changes)) throw new Error("no changes were expected for preview but changes were proposed");
}
