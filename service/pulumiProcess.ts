/**
 * The Pulumi commands the service starts, as processes it can find again after a crash: each runs as the
 * leader of a process group of its own (its language host and plugins are in that group), and is recorded
 * by PID and start time, so that a PID the kernel has since given to another process is never signalled.
 */
import * as fs from "node:fs";

export interface PulumiProcess {
    pid: number;
    /** Start time in clock ticks since boot (/proc/<pid>/stat, field 22). */
    startTime: string;
}

/** The process with this PID now, if any (Linux /proc). */
export function describeProcess(pid: number): PulumiProcess | undefined {
    try {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
        // Field 2 (the command name) may hold spaces and parentheses: count fields after its closing one.
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        if (fields[0] === "Z") return undefined;
        return { pid, startTime: fields[19] };
    } catch {
        return undefined;
    }
}

/** Whether the recorded process is still running: the same PID with the same start time. */
export function stillRunning(recorded: PulumiProcess): boolean {
    return describeProcess(recorded.pid)?.startTime === recorded.startTime;
}

/**
 * Stops a recorded Pulumi command and its process group: SIGINT first (Pulumi's graceful cancel: steps
 * under way finish, its lock is released), SIGKILL to the whole group after `graceMs`. Only when the process
 * is still the recorded one. Says what it did.
 */
export async function stopPulumiProcess(recorded: PulumiProcess, graceMs: number): Promise<string> {
    if (!stillRunning(recorded)) return `its Pulumi command (pid ${recorded.pid}) was no longer running`;
    process.kill(recorded.pid, "SIGINT");
    const deadline = Date.now() + graceMs;
    while (stillRunning(recorded) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    if (!stillRunning(recorded)) return `its Pulumi command (pid ${recorded.pid}) was cancelled`;
    try {
        process.kill(-recorded.pid, "SIGKILL");
    } catch {
        // the group ended in between
    }
    while (stillRunning(recorded)) await new Promise((r) => setTimeout(r, 50));
    return `its Pulumi command (pid ${recorded.pid}) did not stop within ${Math.round(graceMs / 1000)} s of SIGINT and was killed with its process group`;
}
