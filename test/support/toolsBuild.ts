/**
 * Mocha's global fixture (.mocharc.json `require`): starts tools/build.sh when a test run starts, beside the
 * suites rather than before them. Most suites never run a real tool, and the lab suites mostly wait on their
 * hosts, so a first build on a new machine (half an hour or more on 2 cores) overlaps them. It runs at the
 * lowest CPU priority (nice 19): the suites keep their timing (their timeouts were set without a build beside
 * them). The suites that drive a real tool wait for it (`useBuiltTools`, test/support/tools.ts), and run last
 * (package.json's test command lists them last).
 *
 * The build's progress goes to node_modules/.cache/k8s-vnf/tools-build.log and its state to tools-build.status:
 * `building <pid>`, then `ok` or `failed <exit code>`. The build runs in a process group of its own, led by a
 * shell that watches this process: a run ending first (a subset of the suites, a failure) stops the build by
 * that group, and so does the shell when this process is gone without a teardown (killed). build.sh removes
 * what it had not finished, and Go's build cache keeps the packages already compiled.
 */
import { ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { PROJECT_DIR } from "./program";
import { TOOLS_BUILD_LOG, TOOLS_BUILD_STATUS } from "./tools";

let build: ChildProcess | undefined;

/** build.sh ($2) at a lower priority, stopped with its whole group when the test run ($1) is gone. */
const WATCHED_BUILD = `
nice -n 19 bash "$2" & b=$!
while kill -0 "$b" 2>/dev/null; do
    if ! kill -0 "$1" 2>/dev/null; then echo "tools-build: the test run is gone; stopping the build"; kill -TERM -- -$$; fi
    sleep 2
done
wait "$b"`;

export function mochaGlobalSetup(): void {
    fs.mkdirSync(path.dirname(TOOLS_BUILD_STATUS), { recursive: true });
    const log = fs.openSync(TOOLS_BUILD_LOG, "w");
    build = spawn("bash", ["-c", WATCHED_BUILD, "tools-build", String(process.pid), path.join(PROJECT_DIR, "tools/build.sh")], { cwd: PROJECT_DIR, stdio: ["ignore", log, log], detached: true });
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
        build.removeAllListeners("exit");
        try {
            process.kill(-build.pid, "SIGTERM");
        } catch {
            // already gone
        }
        fs.rmSync(TOOLS_BUILD_STATUS, { force: true });
    }
}
