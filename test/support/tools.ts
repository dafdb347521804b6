/**
 * The real tools tools/build.sh built (`npm test` runs it first): where they are, and the environment that
 * makes the Pulumi CLI use them and nothing else. Plugins are found as the CLI finds them on a machine
 * without internet: the language host and the dynamic-provider plugin beside the CLI or on PATH, the
 * resource plugins on PATH; automatic plugin acquisition is off, so a plugin missing fails the run at once.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { PROJECT_DIR } from "./program";

export interface BuiltTools {
    /** The folder holding bin/pulumi and bin/pulumi-resource-pulumi-nodejs (K8S_VNF_PULUMI_ROOT). */
    pulumiRoot: string;
    /** Every tool's bin folder, for PATH. */
    binDirs: string[];
}

const MANIFEST = path.join(PROJECT_DIR, "node_modules/.cache/k8s-vnf/tools.json");

export function builtTools(): BuiltTools {
    if (!fs.existsSync(MANIFEST)) throw new Error(`the real tools are not built: run tools/build.sh (npm test runs it) to make ${MANIFEST}`);
    const bins = JSON.parse(fs.readFileSync(MANIFEST, "utf8")) as Record<string, string>;
    for (const [tool, dir] of Object.entries(bins)) {
        if (!fs.existsSync(dir)) throw new Error(`the ${tool} tools/build.sh built is gone from ${dir}: run tools/build.sh again`);
    }
    if (!bins.pulumi) throw new Error(`${MANIFEST} names no pulumi build: run tools/build.sh again`);
    return { pulumiRoot: path.dirname(bins.pulumi), binDirs: Object.values(bins) };
}

/**
 * The environment of a real `pulumi` run: the built tools first on PATH, a PULUMI_HOME of the test's own
 * (plugins, credentials and workspace settings never shared with the machine's), no update check, no
 * plugin download, and the state passphrase.
 */
export function realPulumiEnv(home: string, passphrase: string, base: NodeJS.ProcessEnv = process.env): Record<string, string> {
    const tools = builtTools();
    const env: Record<string, string> = {};
    for (const key of ["PATH", "HOME", "LANG", "TMPDIR", "USER"]) if (base[key]) env[key] = base[key]!;
    env.PATH = [...tools.binDirs, env.PATH ?? "/usr/bin:/bin"].join(path.delimiter);
    env.PULUMI_HOME = home;
    env.PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION = "true";
    env.PULUMI_SKIP_UPDATE_CHECK = "true";
    // `--event-log`, which the tests read (as the Automation API does), exists only with this set.
    env.PULUMI_DEBUG_COMMANDS = "true";
    env.PULUMI_CONFIG_PASSPHRASE = passphrase;
    return env;
}
