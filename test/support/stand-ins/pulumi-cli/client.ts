/** Where tests find the stand-in Pulumi CLI, and a way to run it as a user would (for setup and checks). */
import { spawnSync } from "node:child_process";
import * as path from "node:path";

/** The directory holding `bin/pulumi` (what the SDK's `PulumiCommand.get({root})` and K8S_VNF_PULUMI_ROOT take). */
export const STAND_IN_PULUMI_ROOT = __dirname;

/** PATH with the stand-in first, and the node running the tests (the stand-in is a node script). */
export function pathWithStandIn(rest = "/usr/bin:/bin"): string {
    return [path.join(STAND_IN_PULUMI_ROOT, "bin"), path.dirname(process.execPath), rest].join(path.delimiter);
}

export interface StandInRun {
    status: number;
    stdout: string;
    stderr: string;
}

/** `pulumi <args> --non-interactive` in `cwd` with exactly `env` (plus PATH), `input` on standard input. */
export function runStandIn(args: string[], options: { cwd: string; env: Record<string, string>; input?: string }): StandInRun {
    const r = spawnSync(path.join(STAND_IN_PULUMI_ROOT, "bin", "pulumi"), [...args, "--non-interactive"], { cwd: options.cwd, env: { PATH: pathWithStandIn(), ...options.env }, input: options.input ?? "", encoding: "utf8" });
    return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}
