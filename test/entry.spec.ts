import { strict as assert } from "node:assert";
import { execFileSync } from "node:child_process";
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

    it("runs the program under the SDK's runner as `pulumi up` starts it", async function () {
        this.timeout(120_000);
        const run = await evaluate(2);
        assert.deepEqual(run.errors, []);
        // Stack, provider, components and resources of 3 masters and 2 workers.
        assert.ok(run.registrations > 30, `${run.registrations} registrations`);
    });

    it("the loader keeps the sources' lines in stack traces and Node's format for its own errors", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-entry-"));
        try {
            fs.writeFileSync(path.join(dir, "thrower.ts"), ["interface Unused { a: number }", "", "export function boom(x: string): never {", "    throw new Error(`boom ${x}`);", "}", ""].join("\n"));
            const script = [
                `Error.prepareStackTrace = () => "source-map-support";`,
                // main.js's stack formatting, without running the program.
                `const src = require("fs").readFileSync(${JSON.stringify(path.join(PROJECT_DIR, "main.js"))}, "utf8");`,
                `const __dirname = ${JSON.stringify(PROJECT_DIR)};`,
                `eval(src.slice(0, src.indexOf("module.exports")).replace('require("./loader/typescript")', "require(" + JSON.stringify(__dirname + "/loader/typescript") + ")"));`,
                `try { require(${JSON.stringify(path.join(dir, "thrower.ts"))}).boom("x"); } catch (e) { console.log(e.stack.split("\\n").slice(0, 2).join("|")); }`,
                `try { Buffer.alloc("x"); } catch (e) { console.log(e.stack.split("\\n")[0]); }`,
            ].join("\n");
            const out = execFileSync(process.execPath, ["-e", script], { cwd: PROJECT_DIR, encoding: "utf8" }).trim().split("\n");
            assert.match(out[0], /^Error: boom x\|\s+at Object\.boom .*thrower\.ts:4:\d+\)$/);
            assert.match(out[1], /^TypeError \[ERR_INVALID_ARG_TYPE\]: /);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});
