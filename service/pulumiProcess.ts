/**
 * The Pulumi commands the service starts, as processes it can find again after a crash: each runs as the
 * leader of a process group of its own, and is recorded by PID and start time, so that a PID the kernel has
 * since given to another process is never signalled. Its group does not hold its language host and plugins:
 * the CLI starts each plugin in a process group of its own (v3.248.0 sdk/go/common/resource/plugin/plugin.go,
 * cmdutil.RegisterProcessGroup: Setpgid), so stopping a command means walking its tree.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

export interface PulumiProcess {
    pid: number;
    /** Start time in clock ticks since boot (/proc/<pid>/stat, field 22). */
    startTime: string;
    /** The host's boot id and name: a PID means something only on the host, and boot, it was read on. */
    bootId?: string;
    hostname?: string;
    /** Its private folder (pulumiCommand.ts: its output files and temporary folder), removed once it has ended. */
    outputDir?: string;
}

/** How the commands' private folders are named in the service's temporary folder. */
export const OUTPUT_DIR_PREFIX = "k8s-vnf-pulumi-output-";

/** Removes a recorded command's private folder, when it is one of those (the record comes from the store). */
export function removeOutputDir(recorded: PulumiProcess): void {
    const dir = recorded.outputDir;
    if (dir && path.dirname(dir) === os.tmpdir() && path.basename(dir).startsWith(OUTPUT_DIR_PREFIX)) fs.rmSync(dir, { recursive: true, force: true });
}

let bootId: string | undefined;

/**
 * Where this process's PIDs mean something: the host's boot (/proc/sys/kernel/random/boot_id) and the PID
 * namespace (containers on one node share the boot, not their PIDs). Processes are compared by PID and start
 * time only within it.
 */
export function thisBoot(): string {
    bootId ??= `${fs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim()}/${fs.readlinkSync("/proc/self/ns/pid")}`;
    return bootId;
}

/** Whether a recorded process was recorded on this host since its last boot (a record without a boot id was). */
export function onThisHost(recorded: PulumiProcess): boolean {
    return recorded.bootId === undefined || recorded.bootId === thisBoot();
}

/** The process with this PID now, if any (Linux /proc). */
export function describeProcess(pid: number): PulumiProcess | undefined {
    try {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
        // Field 2 (the command name) may hold spaces and parentheses: count fields after its closing one.
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        if (fields[0] === "Z") return undefined;
        return { pid, startTime: fields[19], bootId: thisBoot(), hostname: os.hostname() };
    } catch {
        return undefined;
    }
}

/** Whether the recorded process is still running: the same PID with the same start time. */
export function stillRunning(recorded: PulumiProcess): boolean {
    return onThisHost(recorded) && describeProcess(recorded.pid)?.startTime === recorded.startTime;
}

/**
 * Stops a recorded Pulumi command and its process group: SIGINT first (Pulumi's graceful cancel: steps
 * under way finish, its lock is released), SIGKILL to the whole group after `graceMs`. Only when the process
 * is still the recorded one. Says what it did.
 */
export async function stopPulumiProcess(recorded: PulumiProcess, graceMs: number): Promise<string> {
    if (!onThisHost(recorded)) return `its Pulumi command (pid ${recorded.pid}) ran on ${recorded.hostname ?? "another host"}, where it may still run: not stopped from here`;
    if (!stillRunning(recorded)) return `its Pulumi command (pid ${recorded.pid}) was no longer running`;
    // Its processes now, before any of them ends and its children are handed to init.
    const tree = processTree(recorded.pid);
    try {
        process.kill(recorded.pid, "SIGINT");
    } catch {
        // it ended in between
    }
    const deadline = Date.now() + graceMs;
    while (stillRunning(recorded) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    if (!stillRunning(recorded)) return `its Pulumi command (pid ${recorded.pid}) was cancelled`;
    const all = new Map([...tree, ...processTree(recorded.pid)].map((p) => [`${p.pid}:${p.startTime}`, p]));
    for (const target of [-recorded.pid, ...[...all.values()].filter(stillRunning).map((p) => p.pid)]) {
        try {
            process.kill(target, "SIGKILL");
        } catch {
            // it ended in between
        }
    }
    while ([...all.values()].some(stillRunning)) await new Promise((r) => setTimeout(r, 50));
    return `its Pulumi command (pid ${recorded.pid}) did not stop within ${Math.round(graceMs / 1000)} s of SIGINT and was killed with its plugins`;
}

/** The process and every process below it (from /proc: each thread's `children`), as recorded processes. */
export function processTree(pid: number): PulumiProcess[] {
    return [pid, ...descendants(pid)].map(describeProcess).filter((p): p is PulumiProcess => p !== undefined);
}

/** Every process below `pid`, from /proc (each thread's `children`), deepest last. */
export function descendants(pid: number): number[] {
    const found: number[] = [];
    const walk = (parent: number) => {
        let tasks: string[];
        try {
            tasks = fs.readdirSync(`/proc/${parent}/task`);
        } catch {
            return;
        }
        for (const task of tasks) {
            let children = "";
            try {
                children = fs.readFileSync(`/proc/${parent}/task/${task}/children`, "utf8");
            } catch {
                continue;
            }
            for (const child of children.split(" ").filter(Boolean).map(Number)) {
                found.push(child);
                walk(child);
            }
        }
    };
    walk(pid);
    return found;
}
