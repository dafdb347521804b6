/**
 * How the LCM service runs a Pulumi command (service/pulumiCommand.ts) and stops one a dead service left
 * (service/pulumiProcess.ts), with small programs standing in for the CLI: what is checked here is the
 * service's own handling, which the real CLI runs through in test/realLcm.lab.spec.ts.
 */
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { OperationCommand } from "../service/pulumiCommand";
import { describeProcess, PulumiProcess, stopPulumiProcess } from "../service/pulumiProcess";

describe("a Pulumi command's private folder (OperationCommand)", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-command-"));
    after(() => fs.rmSync(dir, { recursive: true, force: true }));
    // Writes a file to its temporary folder, as the Kubernetes plugin writes its kubeconfig, and says where;
    // it lasts long enough to be recorded (a command that ended before it could be is not).
    const cli = path.join(dir, "pulumi");
    fs.writeFileSync(cli, '#!/bin/sh\nsleep 0.5\nprintf \'%s\' "$TMPDIR" && echo secret >"$TMPDIR/kubeconfig123"\n', { mode: 0o755 });

    for (const args of [["up", "--yes"], ["stack", "output", "--show-secrets"]]) {
        it(`pulumi ${args.join(" ")}: its TMPDIR is inside the folder it is recorded with, and both are gone once it has ended`, async () => {
            const recorded: (PulumiProcess | undefined)[] = [];
            const command = new OperationCommand(cli, "3.248.0", { PATH: "/usr/bin:/bin" }, { onProcess: (p) => recorded.push(p) });
            const temporary = (await command.run(args, dir, {})).stdout;
            assert.equal(path.dirname(path.dirname(temporary)), os.tmpdir());
            assert.equal(recorded.length, 2);
            assert.equal(recorded[0]!.outputDir, path.dirname(temporary), "recorded, so that a restarted service removes it");
            assert.equal(recorded[1], undefined);
            assert.equal(fs.existsSync(path.dirname(temporary)), false, "nothing it wrote is left");
        });
    }
});

describe("Pulumi processes a dead service left behind (pulumiProcess)", () => {
    it("only the recorded process is signalled: a PID with another start time is left alone; the recorded one gets SIGINT", async () => {
        const child = spawn("sleep", ["30"], { detached: true, stdio: "ignore" });
        try {
            const recorded = describeProcess(child.pid!)!;
            assert.match(await stopPulumiProcess({ pid: child.pid!, startTime: String(Number(recorded.startTime) - 1) }, 1000), /was no longer running/);
            assert.equal(child.exitCode ?? child.signalCode, null, "another process with that PID is not touched");
            const exited = new Promise((r) => child.once("exit", (_code, signal) => r(signal)));
            assert.match(await stopPulumiProcess(recorded, 5000), new RegExp(`its Pulumi command \\(pid ${child.pid}\\) was cancelled`));
            assert.equal(await exited, "SIGINT");
        } finally {
            if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
        }
    });
});

