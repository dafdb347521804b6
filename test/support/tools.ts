/**
 * The real tools tools/build.sh built (`npm test` runs it first): where they are, and the environment that
 * makes the Pulumi CLI use them and nothing else. Plugins are found as the CLI finds them on a machine
 * without internet: the language host and the dynamic-provider plugin beside the CLI or on PATH, the
 * resource plugins on PATH; automatic plugin acquisition is off, so a plugin missing fails the run at once.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { alive } from "./processAlive";
import { PROJECT_DIR } from "./program";

export interface BuiltTools {
    /** The folder holding bin/pulumi and bin/pulumi-resource-pulumi-nodejs (K8S_VNF_PULUMI_ROOT). */
    pulumiRoot: string;
    /** The bin folders of the CLI and its plugins, for PATH. */
    binDirs: string[];
    /** Each tool's bin folder by the name tools/build.sh gives it (`kube`, `etcd`: the lab's control plane). */
    bins: Record<string, string>;
}

/** What a `pulumi` run finds on its PATH: the CLI, the language host and the resource plugins. */
const PULUMI_TOOLS = ["pulumi", "pulumi-language-nodejs", "openstack", "kubernetes"];

const CACHE = path.join(PROJECT_DIR, "node_modules/.cache/k8s-vnf");
const MANIFEST = path.join(CACHE, "tools.json");
/** What the test run's build of the tools (toolsBuild.ts) printed, and where it is. */
export const TOOLS_BUILD_LOG = path.join(CACHE, "tools-build.log");
export const TOOLS_BUILD_STATUS = path.join(CACHE, "tools-build.status");
/** How long a suite waits for the run's build: a first build on 2 cores beside the other suites. */
const BUILD_WAIT_MS = 90 * 60_000;

/**
 * A `before` hook that waits for the test run's build of the tools (started by toolsBuild.ts), for suites that
 * drive a real tool: call it first in the suite, before its lab starts. Without a build under way (mocha run
 * without the fixture, tools built by `npm run tools`), the tools as built.
 */
export function useBuiltTools(): void {
    before(async function () {
        this.timeout(BUILD_WAIT_MS + 60_000);
        const started = Date.now();
        // The status is written by the fixture's handler of the build's exit, which runs a moment after the
        // build has ended: a build seen gone still gets that moment before it counts as ended without one.
        let goneSince: number | undefined;
        for (;;) {
            const status = fs.existsSync(TOOLS_BUILD_STATUS) ? fs.readFileSync(TOOLS_BUILD_STATUS, "utf8").trim().split(" ") : ["ok"];
            if (status[0] === "ok") return;
            const log = () => (fs.existsSync(TOOLS_BUILD_LOG) ? fs.readFileSync(TOOLS_BUILD_LOG, "utf8").trim().split("\n").slice(-15).join("\n") : "");
            if (status[0] === "failed") throw new Error(`tools/build.sh failed (${status[1]}):\n${log()}`);
            const pid = Number(status[1]);
            if (!alive(pid)) goneSince ??= Date.now();
            if (goneSince !== undefined && Date.now() - goneSince > 10_000) throw new Error(`the run's tools/build.sh (pid ${pid}) ended without a status; run tools/build.sh:\n${log()}`);
            if (Date.now() - started > BUILD_WAIT_MS) throw new Error(`tools/build.sh still building after ${BUILD_WAIT_MS / 60_000} min:\n${log()}`);
            await new Promise((resolve) => setTimeout(resolve, goneSince === undefined ? 2_000 : 200));
        }
    });
}

export function builtTools(): BuiltTools {
    if (!fs.existsSync(MANIFEST)) throw new Error(`the real tools are not built: run tools/build.sh (npm test runs it) to make ${MANIFEST}`);
    const bins = JSON.parse(fs.readFileSync(MANIFEST, "utf8")) as Record<string, string>;
    for (const [tool, dir] of Object.entries(bins)) {
        if (!fs.existsSync(dir)) throw new Error(`the ${tool} tools/build.sh built is gone from ${dir}: run tools/build.sh again`);
    }
    if (!bins.pulumi) throw new Error(`${MANIFEST} names no pulumi build: run tools/build.sh again`);
    return { pulumiRoot: path.dirname(bins.pulumi), binDirs: PULUMI_TOOLS.filter((t) => bins[t]).map((t) => bins[t]), bins };
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
    // Inside the home, so that the test's removal of its home takes what the tools leave in theirs (the
    // Kubernetes plugin a kubeconfig per start).
    env.TMPDIR = path.join(home, "tmp");
    fs.mkdirSync(env.TMPDIR, { recursive: true });
    env.PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION = "true";
    env.PULUMI_SKIP_UPDATE_CHECK = "true";
    // `--event-log`, which the tests read (as the Automation API does), exists only with this set.
    env.PULUMI_DEBUG_COMMANDS = "true";
    env.PULUMI_CONFIG_PASSPHRASE = passphrase;
    return env;
}
