/**
 * A VNF instance's stack config, set so that it is exactly the operation's config and in the form the
 * Pulumi CLI checks against Pulumi.yaml (maps and lists stored as such, not as JSON text):
 * 1. `config rm-all` removes every schema key the config lacks (a rollback must not keep what the failed
 *    operation added);
 * 2. `config set-all --json` sets each key whole, its secret leaves left out (the values of that command
 *    line are visible to `ps`);
 * 3. each secret leaf is set with `config set --secret --path <leaf>`, its value on standard input (the CLI
 *    reads the value there when no value argument is given: pkg/cmd/pulumi/config/config.go,
 *    `configSetCmd.Run`). Which leaves are secret is the project's one rule, config/load `findSecrets`.
 */
import { findSecrets, PROJECT } from "../config/load";
import { CONFIG_KEYS } from "../config/schema";
import { splitPath } from "../config/tackerMap";

/** Runs one `pulumi` command for the stack, with the workspace's directory and environment. */
export type CliRunner = (args: string[], input?: string) => Promise<unknown>;

/** The config without the leaves at `paths` (config/load's secret paths). */
export function withoutLeaves(config: Record<string, unknown>, paths: string[]): Record<string, unknown> {
    const copy = structuredClone(config);
    for (const p of paths) {
        const segments = splitPath(p);
        let node: any = copy;
        for (const seg of segments.slice(0, -1)) node = node?.[seg];
        if (node) delete node[segments[segments.length - 1]];
    }
    return copy;
}

/** `pulumi config set` of one secret leaf, its value to go on standard input (exactly: `--raw`). */
export function secretLeafArgs(stackName: string, leafPath: string): string[] {
    return ["config", "set", "--stack", stackName, "--secret", "--raw", "--path", leafPath];
}

export async function applyStackConfig(stackName: string, config: Record<string, unknown>, run: CliRunner): Promise<void> {
    const present = Object.entries(config).filter(([, v]) => v !== undefined);
    const absent = CONFIG_KEYS.filter((k) => !present.some(([p]) => p === k)).map((k) => `${PROJECT}:${k}`);
    if (absent.length) await run(["config", "rm-all", "--stack", stackName, ...absent]);
    const secrets = findSecrets(config);
    const plain = withoutLeaves(config, secrets.map((s) => s.path));
    // The shape `pulumi config --json` prints: an object's text in `value` and the object in `objectValue`.
    const entries = Object.fromEntries(
        present.map(([k]) => {
            const v = plain[k];
            return [`${PROJECT}:${k}`, v !== null && typeof v === "object" ? { value: JSON.stringify(v), objectValue: v, secret: false } : { value: String(v), secret: false }];
        }),
    );
    if (present.length) await run(["config", "set-all", "--stack", stackName, "--json", JSON.stringify(entries)]);
    for (const s of secrets) await run(secretLeafArgs(stackName, s.path), s.value);
}
