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
