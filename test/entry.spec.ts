import { strict as assert } from "node:assert";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as YAML from "yaml";
import { evaluate } from "../bench/evaluation";
import { PROJECT_DIR } from "./support/program";

describe("entry point (main.js)", () => {
    it("Pulumi.yaml has the language host start main.js as JavaScript", () => {
        const project = YAML.parse(fs.readFileSync(path.join(PROJECT_DIR, "Pulumi.yaml"), "utf8"));
        assert.equal(project.main, "main.js");
        assert.equal(project.runtime.options.typescript, false);
        assert.ok(fs.statSync(path.join(PROJECT_DIR, project.main)).isFile());
    });

    it("runs the program under the SDK's runner as `pulumi up` starts it, sending no debug messages unless asked", async function () {
        this.timeout(120_000);
        const run = await evaluate(2, undefined, { K8S_VNF_SDK_DEBUG_LOGS: "" });
        assert.deepEqual(run.errors, []);
        // Stack, provider, components and resources of 3 masters and 2 workers.
        assert.ok(run.registrations > 30, `${run.registrations} registrations`);
        // Only the runner's own, sent before it loads main.js.
        assert.ok(run.debugLogs < 10, `${run.debugLogs} debug messages`);
        const debugging = await evaluate(2, undefined, { K8S_VNF_SDK_DEBUG_LOGS: "1" });
        assert.deepEqual(debugging.errors, []);
        assert.ok(debugging.debugLogs >= debugging.registrations, `${debugging.debugLogs} debug messages for ${debugging.registrations} registrations`);
    });

    /** Runs `body` in a Node process after loader/sdkRuntime.js, with source-map-support's hook in place as the runner has it. */
    const afterSdkRuntime = (body: string[], env: NodeJS.ProcessEnv = {}) =>
        execFileSync(process.execPath, ["-e", [`Error.prepareStackTrace = () => "source-map-support";`, `require(${JSON.stringify(path.join(PROJECT_DIR, "loader", "sdkRuntime.js"))});`, ...body].join("\n")], {
            cwd: PROJECT_DIR,
            encoding: "utf8",
            env: { ...process.env, PULUMI_DEBUG_PROMISE_LEAKS: "", ...env },
        })
            .trim()
            .split("\n");

    it("stack traces keep the sources' lines and Node's format for its own errors", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-entry-"));
        try {
            fs.writeFileSync(path.join(dir, "thrower.ts"), ["interface Unused { a: number }", "", "export function boom(x: string): never {", "    throw new Error(`boom ${x}`);", "}", ""].join("\n"));
            const out = afterSdkRuntime([
                `require(${JSON.stringify(path.join(PROJECT_DIR, "loader", "typescript.js"))});`,
                `try { require(${JSON.stringify(path.join(dir, "thrower.ts"))}).boom("x"); } catch (e) { console.log(e.stack.split("\\n").slice(0, 2).join("|")); }`,
                `try { Buffer.alloc("x"); } catch (e) { console.log(e.stack.split("\\n")[0]); }`,
            ]);
            assert.match(out[0], /^Error: boom x\|\s+at Object\.boom .*thrower\.ts:4:\d+\)$/);
            assert.match(out[1], /^TypeError \[ERR_INVALID_ARG_TYPE\]: /);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    it("the loader keeps what it compiled, one entry per source, never a stale one", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-loader-"));
        const source = path.join(dir, "value.ts");
        const cacheDir = path.join(PROJECT_DIR, "node_modules", ".cache", "k8s-vnf", "sucrase");
        const entryPrefix = `${createHash("sha256").update(source).digest("hex").slice(0, 32)}-`;
        const load = () =>
            execFileSync(process.execPath, ["-r", path.join(PROJECT_DIR, "loader", "typescript.js"), "-e", `console.log(require(${JSON.stringify(source)}).value)`], { encoding: "utf8" }).trim();
        const entries = () => fs.readdirSync(cacheDir).filter((f) => f.startsWith(entryPrefix));
        try {
            fs.writeFileSync(source, "export const value: number = 1;\n");
            assert.equal(load(), "1");
            assert.equal(load(), "1");
            assert.equal(entries().length, 1);
            fs.writeFileSync(source, "export const value: number = 2;\n");
            assert.equal(load(), "2");
            assert.equal(entries().length, 1);
        } finally {
            for (const f of fs.existsSync(cacheDir) ? entries() : []) fs.rmSync(path.join(cacheDir, f), { force: true });
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    it("the SDK's tracked promises keep no stack unless PULUMI_DEBUG_PROMISE_LEAKS is set, other errors keep theirs", () => {
        const body = [
            `const { debuggablePromise } = require("@pulumi/pulumi/runtime/debuggable");`,
            `const p = Promise.resolve(1);`,
            `debuggablePromise(p, "ctx");`,
            `console.log(JSON.stringify({ tracked: p._debugStackTrace, other: new Error("x").stack.split("\\n").length > 1, limit: Error.stackTraceLimit }));`,
        ];
        assert.deepEqual(JSON.parse(afterSdkRuntime(body)[0]), { tracked: "Error", other: true, limit: 10 });
        const debugging = JSON.parse(afterSdkRuntime(body, { PULUMI_DEBUG_PROMISE_LEAKS: "1" })[0]);
        assert.match(debugging.tracked, /^Error\n\s+at /);
    });
});
