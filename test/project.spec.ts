import { strict as assert } from "node:assert";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as YAML from "yaml";
import { CONFIG_KEYS, SCALAR_KEYS } from "../config/schema";
import { REQUESTS_DIR } from "./support/fixtures";
import { PROJECT_DIR } from "./support/program";

const SEEDS_DIR = path.resolve(PROJECT_DIR, "../shared/seeds");

describe("project", () => {
    it("Pulumi.yaml declares exactly the model's config keys, scalars as strings, structures as objects or lists", () => {
        const project = YAML.parse(fs.readFileSync(path.join(PROJECT_DIR, "Pulumi.yaml"), "utf8"));
        assert.equal(project.name, "k8s-vnf");
        assert.equal(project.stackConfigDir, "stacks");
        assert.deepEqual(Object.keys(project.config), [...CONFIG_KEYS]);
        for (const [key, decl] of Object.entries<{ type: string; default: unknown }>(project.config)) {
            assert.equal(decl.type, SCALAR_KEYS.has(key) ? "string" : Array.isArray(decl.default) ? "array" : "object", key);
            assert.ok("default" in decl, `${key} needs a default, or Pulumi makes it required`);
        }
    });

    it("the request fixtures are the seeds' bodies, verbatim", function () {
        if (!fs.existsSync(SEEDS_DIR)) this.skip();
        const seeds = fs.readdirSync(SEEDS_DIR).map((f) => fs.readFileSync(path.join(SEEDS_DIR, f), "utf8")).join("\n");
        for (const file of fs.readdirSync(REQUESTS_DIR)) {
            assert.ok(seeds.includes(fs.readFileSync(path.join(REQUESTS_DIR, file), "utf8").trimEnd()), `${file} is not in the seeds`);
        }
    });

    it("TypeScript is pinned to 5.x", () => {
        const pkg = JSON.parse(fs.readFileSync(path.join(PROJECT_DIR, "package.json"), "utf8"));
        assert.match(pkg.dependencies.typescript, /^5\.\d+\.\d+$/);
    });

    it("every shell script is shellcheck-clean", function () {
        if (spawnSync("shellcheck", ["--version"]).status !== 0) {
            if (process.env.CI) assert.fail("shellcheck is missing; .ci/run installs it");
            this.skip();
        }
        const tracked = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard"], { cwd: PROJECT_DIR, encoding: "utf8" }).split("\n");
        const scripts = tracked.filter((f) => f.endsWith(".sh") || (f && fs.existsSync(path.join(PROJECT_DIR, f)) && /^#!.*\b(ba)?sh\b/.test(fs.readFileSync(path.join(PROJECT_DIR, f), "utf8").split("\n")[0])));
        assert.ok(scripts.length > 0);
        const result = spawnSync("shellcheck", scripts, { cwd: PROJECT_DIR, encoding: "utf8" });
        assert.equal(result.status, 0, result.stdout);
    });
});
