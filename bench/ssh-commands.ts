/**
 * 200 small commands on one lab host: through the project's SSH transport (one session, a channel per
 * command, each wrapped in the remote deadline) versus the OpenSSH client multiplexing over a
 * ControlMaster connection. Prints both and the ratio. Run as root: `npm run bench`.
 */
import { execFile, execFileSync } from "node:child_process";
import * as path from "node:path";
import { promisify } from "node:util";
import { Lab, labAvailable } from "../test/lab/lab";
import { SshSession } from "../providers/transport/ssh";
import { sh } from "../providers/transport/shell";

const COMMANDS = 200;
const run = promisify(execFile);

async function main(): Promise<void> {
    const available = labAvailable();
    if (!available.ok) throw new Error(`the bench needs lab hosts: ${available.why}`);
    const lab = new Lab();
    try {
        await lab.start(["bench"]);
        const host = lab.host("bench");

        const session = await SshSession.open(lab.target("bench"), {}, { step: "bench", log: () => undefined });
        await session.exec(sh`true`, { quiet: true });
        const t0 = process.hrtime.bigint();
        for (let i = 0; i < COMMANDS; i++) await session.exec(sh`echo ${i}`, { quiet: true });
        const transportMs = Number(process.hrtime.bigint() - t0) / 1e6;
        session.close();

        const control = path.join(lab.dir, "cm-%C");
        const base = ["-i", lab.privateKeyFile, "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", `UserKnownHostsFile=${path.join(lab.dir, "known_hosts")}`, "-o", "ControlMaster=auto", "-o", `ControlPath=${control}`, "-o", "ControlPersist=60"];
        const target = `ubuntu@${host.address}`;
        await run("ssh", [...base, target, "true"]);
        const t1 = process.hrtime.bigint();
        for (let i = 0; i < COMMANDS; i++) await run("ssh", [...base, target, `echo ${i}`]);
        const opensshMs = Number(process.hrtime.bigint() - t1) / 1e6;
        execFileSync("ssh", [...base, "-O", "exit", target], { stdio: "ignore" });

        const row = (label: string, ms: number) => `${label.padEnd(44)} ${ms.toFixed(0).padStart(7)} ms total  ${(ms / COMMANDS).toFixed(2).padStart(6)} ms/command`;
        console.log(`${COMMANDS} small commands on one lab host (${host.address})`);
        console.log(row("k8s-vnf transport (ssh2, one session)", transportMs));
        console.log(row("OpenSSH client with ControlMaster", opensshMs));
        console.log(`ratio transport / OpenSSH: ${(transportMs / opensshMs).toFixed(2)}`);
    } finally {
        await lab.stop();
    }
}

main().catch((e) => {
    console.error(e instanceof Error ? e.message : e);
    process.exitCode = 1;
});

