/**
 * Shared set-up for tests on lab hosts: one lab per suite, stopped after it (also when tests fail), and a
 * record of every line of output the suite captured, checked for secrets at the end.
 */
import { strict as assert } from "node:assert";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { Lab, labAvailable } from "../lab/lab";
import { runTeardowns } from "./teardowns";

const run = promisify(execFile);

export interface LabSuite {
    lab: Lab;
    /** Every log line and error message the suite saw. */
    captured: string[];
    log: (line: string) => void;
    /**
     * Something the suite started on the lab (a CLI, a server) to stop after its tests: teardowns run last
     * registered first, each whatever the others did, before the output is scanned and the lab stops.
     */
    onTeardown: (fn: () => unknown) => void;
}

/**
 * Call inside `describe` of a suite whose tests share one stack, each building on the last: after a failure
 * the rest are skipped (they would only wait out their timeouts).
 */
export function skipAfterFirstFailure(): void {
    let failed = false;
    beforeEach(function () {
        if (failed) this.skip();
    });
    afterEach(function () {
        if (this.currentTest?.state === "failed") failed = true;
    });
}

/** Call inside `describe`: starts `hosts` before the suite, stops them after, scans output for `secrets`. */
export function useLab(hosts: string[], options: { volumeMb?: number; secrets?: () => string[]; bootSystemd?: boolean } = {}): LabSuite {
    const suite = { captured: [] as string[] } as LabSuite;
    suite.log = (line: string) => suite.captured.push(line);
    const teardowns: (() => unknown)[] = [];
    suite.onTeardown = (fn) => void teardowns.push(fn);

    // Everything the process prints while the suite runs is scanned too, not only what tests collect.
    const writes: { stream: NodeJS.WriteStream; original: NodeJS.WriteStream["write"] }[] = [];

    before(async function () {
        for (const stream of [process.stdout, process.stderr]) {
            const original = stream.write;
            writes.push({ stream, original });
            stream.write = function (this: NodeJS.WriteStream, chunk: unknown, ...rest: unknown[]) {
                suite.captured.push(String(chunk));
                return (original as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
            } as NodeJS.WriteStream["write"];
        }
        const available = labAvailable();
        if (!available.ok) {
            if (process.env.CI) assert.fail(`lab hosts unavailable in CI: ${available.why}`);
            this.skip();
        }
        // A new machine builds the hosts' images first (debootstrap and apt: minutes, more beside a first tool
        // build); the hosts' own start then has its usual time.
        this.timeout(1_200_000);
        await Lab.rootfs({ systemd: options.bootSystemd });
        this.timeout(300_000);
        suite.lab = new Lab();
        if (options.bootSystemd) await suite.lab.bootSystemd();
        await suite.lab.start(hosts, { volumeMb: options.volumeMb });
    });

    after(async function () {
        const failures: unknown[] = [];
        await runTeardowns(teardowns).catch((e: unknown) => failures.push(e));
        for (const { stream, original } of writes.splice(0)) stream.write = original;
        if (suite.lab) {
            const secrets = [suite.lab.password, suite.lab.privateKey, ...(options.secrets?.() ?? [])];
            await suite.lab.stop();
            const leaked = suite.captured.filter((line) => secrets.some((s) => s && line.includes(s)));
            if (leaked.length) failures.push(new assert.AssertionError({ message: "captured output contains a secret", actual: leaked, expected: [], operator: "deepStrictEqual" }));
        }
        if (failures.length) throw failures[0];
    });

    return suite;
}

/** Runs `fn` and returns the error it throws, recording its message as captured output. */
export async function failure(suite: LabSuite, fn: () => Promise<unknown>): Promise<Error> {
    try {
        await fn();
    } catch (e) {
        suite.captured.push((e as Error).message);
        return e as Error;
    }
    assert.fail("expected a failure");
}

/** A command inside a lab host: its combined output and exit code (never throws). */
export async function attemptInside(lab: Lab, host: string, command: string, input?: string | Buffer): Promise<{ out: string; code: number }> {
    const out = await lab.inside(host, `{ ${command}\n} 2>&1; echo "rc=$?"`, { input });
    const code = Number(/rc=(\d+)\n$/.exec(out)![1]);
    return { out: out.replace(/rc=\d+\n$/, ""), code };
}

/** `sudo COMMAND` over a real SSH session as the lab's login user (sudo reads the password on stdin). */
export async function sudoOverSsh(lab: Lab, host: string, command: string): Promise<string> {
    const args = ["-q", "-i", lab.privateKeyFile, "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", `ubuntu@${lab.host(host).address}`, `sudo -S -p '' ${command}`];
    const child = run("ssh", args, { timeout: 60_000 });
    child.child.stdin!.end(`${lab.password}\n`);
    return (await child).stdout;
}
