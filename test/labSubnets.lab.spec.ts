/**
 * Two labs never share a subnet: lab.sh bridge-up takes, under a lock, the first 10.231.N.0/24 from the one a
 * lab prefers that no interface of the machine holds. (Two bridges on one /24 left one lab's hosts unreachable
 * and the other's answering at their addresses: a transport suite once logged in to another suite's master.)
 */
import { strict as assert } from "node:assert";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as path from "node:path";
import { labAvailable } from "./lab/lab";

const SCRIPT = path.join(__dirname, "lab/lab.sh");

describe("lab subnets", function () {
    this.timeout(60_000);

    it("a second lab that prefers a subnet another holds gets the next free one; each bridge holds its own", function () {
        const available = labAvailable();
        if (!available.ok) {
            if (process.env.CI) assert.fail(`lab hosts cannot run: ${available.why}`);
            this.skip();
        }
        const runs = [0, 1].map(() => randomBytes(3).toString("hex"));
        const made: string[] = [];
        try {
            // Both prefer 10.231.250, the last subnet a lab prefers of its own.
            const subnets = runs.map((run) => {
                const subnet = execFileSync(SCRIPT, ["bridge-up", run, "250"], { encoding: "utf8" }).trim();
                made.push(run);
                return subnet;
            });
            assert.notEqual(subnets[0], subnets[1]);
            for (const [i, run] of runs.entries()) {
                assert.match(execFileSync("ip", ["-o", "-4", "addr", "show", "dev", `kv${run}br`], { encoding: "utf8" }), new RegExp(` inet ${subnets[i].replace(/\./g, "\\.")}\\.1/24 `));
            }
        } finally {
            for (const run of made) execFileSync(SCRIPT, ["bridge-down", run]);
        }
    });
});
