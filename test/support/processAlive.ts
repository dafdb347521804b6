import * as fs from "node:fs";

/** Whether a process runs (a zombie, dead and waiting to be reaped, does not). */
export function alive(pid: number): boolean {
    try {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
        return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
    } catch {
        return false;
    }
}

/** Process `pid`'s arguments joined by spaces (as /proc/PID/cmdline holds them), "" once it has ended. */
export function commandLine(pid: number): string {
    try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
    } catch {
        return "";
    }
}
