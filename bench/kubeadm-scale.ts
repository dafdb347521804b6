/**
 * Wall time of instantiate (3 masters + 8 workers) and of a scale-out by 8 workers on lab hosts, with the
 * kubeadm stand-in taking a fixed time d for each `init` and `join` (a node's install, made the dominant
 * cost). Each figure is measured twice: scheduled by dependency as `pulumi up` runs the steps (masters
 * join one at a time, workers in parallel), and node by node as Tacker's driver does. Printed as seconds
 * and as multiples of d. Run as root: `npm run bench`.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { Lab, labAvailable } from "../test/lab/lab";
import { LabCluster, nodeName, runScheduled } from "../test/support/labCluster";

const D_SECONDS = Number(process.env.BENCH_INSTALL_DELAY ?? 2);
const MASTERS = 3;
const WORKERS = 8;
const SCALE_OUT = 8;

type Mode = "scheduled" | "node by node";

async function measure(mode: Mode): Promise<{ instantiate: number; scaleOut: number }> {
    const lab = new Lab();
    const names = [...Array.from({ length: MASTERS }, (_, i) => nodeName("master", i)), ...Array.from({ length: WORKERS + SCALE_OUT }, (_, i) => nodeName("worker", i))];
    const cluster = new LabCluster(lab, { masters: MASTERS, workers: WORKERS });
    try {
        await lab.start(names);
        await cluster.startProviders();
        fs.writeFileSync(path.join(lab.clusterState, "delay"), String(D_SECONDS));
        const run = async (resources: { name: string; after: string[] }[]) => {
            const started = process.hrtime.bigint();
            if (mode === "scheduled") await runScheduled(resources.map((r) => ({ ...r, run: () => cluster.create(r.name).then(() => undefined) })));
            else for (const r of resources) await cluster.create(r.name);
            return Number(process.hrtime.bigint() - started) / 1e9;
        };
        const instantiate = await run(cluster.graph(WORKERS));
        cluster.workers = WORKERS + SCALE_OUT;
        const scaleOut = await run(cluster.graph(WORKERS + SCALE_OUT).filter((r) => !cluster.state.has(r.name)));
        return { instantiate, scaleOut };
    } finally {
        cluster.stop();
        lab.stopSync();
    }
}

async function main(): Promise<void> {
    const available = labAvailable();
    if (!available.ok) throw new Error(`the bench needs lab hosts: ${available.why}`);
    const scheduled = await measure("scheduled");
    const sequential = await measure("node by node");
    const cell = (s: number) => `${s.toFixed(1).padStart(6)} s = ${(s / D_SECONDS).toFixed(1).padStart(5)} d`;
    console.log(`kubeadm steps on lab hosts: ${MASTERS} masters + ${WORKERS} workers, then +${SCALE_OUT}; stand-in init/join takes d = ${D_SECONDS} s`);
    console.log(`${"".padEnd(28)} ${"scheduled (pulumi up)".padEnd(22)} ${"node by node (Tacker)".padEnd(22)} speed-up`);
    console.log(`${"instantiate".padEnd(28)} ${cell(scheduled.instantiate).padEnd(22)} ${cell(sequential.instantiate).padEnd(22)} ${(sequential.instantiate / scheduled.instantiate).toFixed(1)}x`);
    console.log(`${`scale-out by ${SCALE_OUT}`.padEnd(28)} ${cell(scheduled.scaleOut).padEnd(22)} ${cell(sequential.scaleOut).padEnd(22)} ${(sequential.scaleOut / scheduled.scaleOut).toFixed(1)}x`);
    console.log(`(lower bounds: instantiate ${MASTERS} d scheduled vs ${MASTERS + WORKERS} d node by node; scale-out 1 d vs ${SCALE_OUT} d)`);
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
