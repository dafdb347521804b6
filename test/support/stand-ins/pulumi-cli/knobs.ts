/**
 * What a test can ask of the stand-in beyond the real CLI's behaviour, through files in the folder
 * `$PULUMI_STANDIN_STATE` (all optional):
 * - `calls`: every command line is appended, `<pid> <arguments>` (what `ps` would show); an update adds
 *   `<pid> env OS_AUTH_URL=<url> OS_PASSWORD=set|unset` (which OpenStack credentials reached it);
 * - `delays.json`: `{"<command>": ms}` — that command waits first (an update waits holding its lock, and
 *   SIGINT cancels the wait as it cancels an update);
 * - `fail-next`: the next update, refresh or destroy fails with the file's text (the file is removed);
 * - `version`: what `pulumi version` reports instead of the stand-in's own version.
 */
import * as fs from "node:fs";
import * as path from "node:path";

const dir = process.env.PULUMI_STANDIN_STATE;
const file = (name: string) => (dir ? path.join(dir, name) : undefined);

export function recordCall(argv: string[]): void {
    const calls = file("calls");
    if (calls) fs.appendFileSync(calls, `${process.pid} ${argv.join(" ")}\n`);
}

export function recordUpdateEnvironment(): void {
    const calls = file("calls");
    if (calls) fs.appendFileSync(calls, `${process.pid} env OS_AUTH_URL=${process.env.OS_AUTH_URL ?? ""} OS_PASSWORD=${process.env.OS_PASSWORD ? "set" : "unset"}\n`);
}

export function versionOverride(): string | undefined {
    const f = file("version");
    return f && fs.existsSync(f) ? fs.readFileSync(f, "utf8").trim() : undefined;
}

/** Waits as long as `delays.json` says for `command`; resolves early when `signal` aborts. */
export async function delayFor(command: string, signal?: AbortSignal): Promise<void> {
    const f = file("delays.json");
    if (!f || !fs.existsSync(f)) return;
    const ms = (JSON.parse(fs.readFileSync(f, "utf8")) as Record<string, number>)[command];
    if (!ms) return;
    await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        signal?.addEventListener("abort", () => {
            clearTimeout(timer);
            resolve();
        });
    });
}

/** The failure a test planted for the next update, consumed. */
export function takePlantedFailure(): string | undefined {
    const f = file("fail-next");
    if (!f || !fs.existsSync(f)) return undefined;
    const why = fs.readFileSync(f, "utf8").trim();
    fs.rmSync(f);
    return why;
}
