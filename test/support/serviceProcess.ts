/**
 * The LCM service as a user runs it (`bin/k8s-vnf serve`, its own process), for tests and the bench:
 * started on a free loopback port, stopped (or crashed) by its own PID.
 */
import { ChildProcess, spawn } from "node:child_process";
import * as path from "node:path";
import { PROJECT_DIR } from "./program";

export interface ApiResponse {
    status: number;
    location: string | null;
    body: any;
}

export class ServiceProcess {
    private constructor(
        private readonly child: ChildProcess,
        readonly url: string,
        private readonly printed: { text: string },
    ) {}

    get pid(): number {
        return this.child.pid!;
    }

    /** Everything the service printed (stdout and stderr) so far. */
    get output(): string {
        return this.printed.text;
    }

    /**
     * `env` is added to `baseEnv` (the test's environment unless given). Callbacks may be on loopback: the
     * tests' subscribers are.
     */
    static async start(dataDir: string, env: Record<string, string> = {}, extraArgs: string[] = [], baseEnv: NodeJS.ProcessEnv = process.env): Promise<ServiceProcess> {
        const child = spawn(path.join(PROJECT_DIR, "bin/k8s-vnf"), ["serve", "--port", "0", "--data-dir", dataDir, "--allow-loopback-callbacks", ...extraArgs], { env: { ...baseEnv, ...env }, stdio: ["ignore", "pipe", "pipe"] });
        const printed = { text: "" };
        child.stderr!.on("data", (d) => (printed.text += d));
        const url = await new Promise<string>((resolve, reject) => {
            child.stdout!.on("data", (d) => {
                printed.text += d;
                // The banner: text, or a JSON line with --log-format json.
                const m = /(?:on |"url":")(http:\/\/127\.0\.0\.1:\d+)\/vnflcm\/v1/.exec(String(d));
                if (m) resolve(m[1]);
            });
            child.once("exit", (code) => reject(new Error(`serve exited ${code}: ${printed.text}`)));
        });
        return new ServiceProcess(child, url, printed);
    }

    /** A JSON request to the service; the answer's status, Location and parsed body. */
    async call(method: string, route: string, body?: unknown): Promise<ApiResponse> {
        const r = await fetch(`${this.url}${route}`, { method, headers: body ? { "content-type": "application/json" } : {}, body: body ? JSON.stringify(body) : undefined });
        const text = await r.text();
        return { status: r.status, location: r.headers.get("location"), body: text ? JSON.parse(text) : undefined };
    }

    async stop(): Promise<void> {
        await this.signal("SIGTERM");
    }

    /** A crash: the process dies at once, with no chance to record anything. */
    async crash(): Promise<void> {
        await this.signal("SIGKILL");
    }

    private async signal(signal: NodeJS.Signals): Promise<void> {
        if (this.child.exitCode !== null || this.child.signalCode !== null) return;
        const exited = new Promise((r) => this.child.once("exit", r));
        this.child.kill(signal);
        await exited;
    }
}

/** An operation occurrence's state, read from its URL (a task's Location). */
export async function opState(opUrl: string): Promise<string> {
    return ((await (await fetch(opUrl)).json()) as { operationState: string }).operationState;
}

/** Polls an occurrence until it is in one of `states`; fails after 10 s. */
export async function waitForOp(opUrl: string, states: string[]): Promise<string> {
    for (let i = 0; i < 200; i++) {
        const s = await opState(opUrl);
        if (states.includes(s)) return s;
        await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${opUrl} never reached ${states.join("/")}`);
}
