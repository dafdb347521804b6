/**
 * Starts the program in its own process (programHost.ts, the language host's part) and carries its
 * monitor's requests to the engine: one `ProgramRun` per `pulumi up` or preview.
 */
import { ChildProcess, fork } from "node:child_process";
import * as path from "node:path";

export interface ProgramHandlers {
    supportsFeature(id: string): boolean;
    registerResource(request: Record<string, any>): Promise<{ urn: string; id: string; object: Record<string, unknown> }>;
    registerResourceOutputs(urn: string, outputs: Record<string, unknown>): void;
    /** A line the program printed; `stream` says where (the language host forwards both as diagnostics). */
    output(line: string, stream: "stdout" | "stderr"): void;
}

export interface ProgramSettings {
    projectDir: string;
    stack: string;
    /** `PULUMI_CONFIG`: key → value as text; secrets decrypted. */
    config: Record<string, string>;
    secretKeys: string[];
    env: Record<string, string>;
}

export class ProgramRun {
    private readonly child: ChildProcess;
    /** Resolves when the program ended: undefined when it succeeded, else what it failed with. */
    readonly finished: Promise<string | undefined>;

    constructor(settings: ProgramSettings, handlers: ProgramHandlers) {
        const env: NodeJS.ProcessEnv = {
            PATH: process.env.PATH,
            HOME: process.env.HOME,
            ...settings.env,
            PULUMI_CONFIG: JSON.stringify(settings.config),
            PULUMI_CONFIG_SECRET_KEYS: JSON.stringify(settings.secretKeys),
        };
        // The language host starts the program's entry as JavaScript (Pulumi.yaml `main`, runtime.options.typescript
        // false); the entry loads the TypeScript sources with sucrase (loader/typescript.js). The host process here
        // loads itself (programHost.ts) with that same loader, so the program runs as under `pulumi up`.
        this.child = fork(path.join(__dirname, "programHost.ts"), [settings.projectDir, settings.stack], {
            cwd: settings.projectDir,
            env,
            execArgv: ["-r", path.join(settings.projectDir, "loader", "typescript.js")],
            stdio: ["ignore", "pipe", "pipe", "ipc"],
        });
        for (const stream of ["stdout", "stderr"] as const) {
            let buffered = "";
            this.child[stream]!.on("data", (d) => {
                buffered += String(d);
                const lines = buffered.split("\n");
                buffered = lines.pop()!;
                for (const line of lines) handlers.output(line, stream);
            });
        }
        let verdict: string | undefined | null = null;
        this.finished = new Promise((resolve) => {
            this.child.on("message", async (message: { kind: string; call: number; request: Record<string, any> }) => {
                const reply = (answer: Record<string, unknown>) => {
                    // The program may be killed meanwhile (a failed run stops it): the channel then fails with
                    // EPIPE, which the callback takes instead of an uncaught 'error' that would end the CLI.
                    if (this.child.connected) this.child.send({ call: message.call, ...answer }, () => undefined);
                };
                if (message.kind === "supportsFeature") reply({ hasSupport: handlers.supportsFeature(message.request.id) });
                else if (message.kind === "registerResource") reply(await handlers.registerResource(message.request).catch((e: Error & { code?: number }) => ({ error: e.message, code: e.code })));
                else if (message.kind === "registerResourceOutputs") {
                    handlers.registerResourceOutputs(message.request.urn, message.request.outputs);
                    reply({});
                } else if (message.kind === "done") verdict ??= undefined;
                else if (message.kind === "failed") verdict ??= message.request.message as string;
            });
            this.child.on("exit", (code, signal) => resolve(verdict === null ? `the program exited with ${signal ?? code} before it finished` : verdict));
        });
    }

    /** Ends the program at once (the engine stops a deployment that failed or was cancelled). */
    kill(): void {
        if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
    }
}
