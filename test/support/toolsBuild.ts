/**
 * Mocha's global fixture (.mocharc.json `require`): starts tools/build.sh when a test run starts, beside the
 * suites rather than before them. Most suites never run a real tool, and the lab suites mostly wait on their
 * hosts, so a first build on a new machine (about half an hour on 2 cores) overlaps them; the build runs at a
 * lower CPU priority (nice 10) so that the suites keep their timing. The suites that drive a real tool wait for
 * it (`useBuiltTools`, test/support/tools.ts), and run last (package.json's test command lists them last).
 *
 * The build's progress goes to node_modules/.cache/k8s-vnf/tools-build.log and its state to tools-build.status:
 * `building <pid>`, then `ok` or `failed <exit code>`. A run ending first (a subset of the suites, a failure)
 * stops the build by its process group: build.sh removes what it had not finished, and Go's build cache keeps
 * the packages already compiled.
 */
import { ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { PROJECT_DIR } from "./program";
import { TOOLS_BUILD_LOG, TOOLS_BUILD_STATUS } from "./tools";

let build: ChildProcess | undefined;

export function mochaGlobalSetup(): void {
    fs.mkdirSync(path.dirname(TOOLS_BUILD_STATUS), { recursive: true });
    const log = fs.openSync(TOOLS_BUILD_LOG, "w");
    build = spawn("nice", ["-n", "10", "bash", path.join(PROJECT_DIR, "tools/build.sh")], { cwd: PROJECT_DIR, stdio: ["ignore", log, log], detached: true });
    fs.closeSync(log);
    fs.writeFileSync(TOOLS_BUILD_STATUS, `building ${build.pid}\n`);
    build.once("exit", (code, signal) => {
        fs.writeFileSync(TOOLS_BUILD_STATUS, code === 0 ? "ok\n" : `failed ${code ?? signal}\n`);
        build = undefined;
    });
    build.unref();
}

export function mochaGlobalTeardown(): void {
    if (build?.pid) {
        try {
            process.kill(-build.pid, "SIGTERM");
        } catch {
            // already gone
        }
        fs.writeFileSync(TOOLS_BUILD_STATUS, "failed stopped with the test run\n");
    }
}
