/**
 * The few Pulumi CLI calls the project's own commands need. Secret values go to the CLI on standard input,
 * never on its command line (where `ps` and shell history would show them).
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { secretLeafArgs } from "../service/stackConfig";

/** The `pulumi` executable on PATH, or undefined. */
export function findPulumi(env: NodeJS.ProcessEnv = process.env): string | undefined {
    for (const dir of (env.PATH ?? "").split(path.delimiter)) {
        if (!dir) continue;
        const candidate = path.join(dir, "pulumi");
        try {
            fs.accessSync(candidate, fs.constants.X_OK);
            return candidate;
        } catch {
            // not here
        }
    }
    return undefined;
}

export class PulumiCliError extends Error {}

/** Where and how the Pulumi CLI runs: its path, the project directory and its environment. */
export interface PulumiCli {
    path: string;
    projectDir: string;
    env: NodeJS.ProcessEnv;
}

function run(cli: PulumiCli, args: string[], input?: string): void {
    const result = spawnSync(cli.path, [...args, "--non-interactive"], { cwd: cli.projectDir, env: cli.env, input, encoding: "utf8" });
    if (result.error) throw new PulumiCliError(`pulumi ${args[0]} ${args[1]}: ${result.error.message}`);
    if (result.status !== 0) {
        const tail = (result.stderr || result.stdout || "").trim().split("\n").slice(-3).join(" / ");
        throw new PulumiCliError(`pulumi ${args.slice(0, 2).join(" ")} exited ${result.status}: ${tail}`);
    }
}

export function selectOrCreateStack(cli: PulumiCli, stack: string): void {
    run(cli, ["stack", "select", "--create", stack]);
}

/** `pulumi config set --secret --path <path>` with the value on standard input (the service sets secrets alike). */
export function setSecretConfig(cli: PulumiCli, stack: string, configPath: string, value: string): void {
    run(cli, secretLeafArgs(stack, configPath), value);
}
