/**
 * Wall time of instantiate (3 masters + 8 workers) and of a scale-out by 8 workers: the real program run
 * through the test engine on lab hosts, with the kubeadm stand-in taking d seconds for each `init` and
 * `join` (a node's install, made the dominant cost). Measured at two delays, so the slope (the critical
 * path, in d) and the intercept (the fixed overhead: VMs, SSH, node preparation) come apart; once as
 * `pulumi up` schedules the steps and once node by node (`--parallel 1`, as Tacker's driver runs them).
 * The slope is the critical path only where the chain of installs is the longest path at both delays, and
 * the fixed work (VMs starting, node preparation: about 20–25 s) varies by a few seconds from run to run.
 * So the scheduled runs are measured at delays far apart, 4 s and 16 s, twice each, the faster counting
 * (the variation only ever adds); node by node, where installs dominate from the start, at 1 s and 3 s.
 * Run as root: `npm run bench`. BENCH_DELAYS overrides the scheduled runs' delays ("4,16"), BENCH_REPEATS their
 * tries at each (2); BENCH_NODE_BY_NODE=0 leaves out the node-by-node runs.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { Lab, labAvailable } from "../test/lab/lab";
import { LabStack } from "../test/support/labStack";

const MASTERS = 3;
const WORKERS = 8;
const SCALE_OUT = 8;
const GOALS = { instantiate: 3.2, scaleOut: 1.2 };

type Mode = { name: string; parallel?: number; delays: number[]; repeats: number };
type Times = { instantiate: number; scaleOut: number };

async function measure(mode: Mode, delay: number): Promise<Times> {
    const lab = new Lab();
    try {
        await lab.start([]);
        const stack = new LabStack(lab, "bench", {
            vnfName: "bench",
            flavour: "complex",
            image: "lab-image",
            flavor: "lab-flavor",
            network: { networkId: "lab-net", subnetId: "lab-subnet" },
            controlPlane: { vip: `${lab.subnet}.200` },
            masters: { count: MASTERS, password: lab.password },
            workers: { count: WORKERS, maxCount: WORKERS + SCALE_OUT, password: lab.password },
            kubernetes: { cniManifest: "https://projectcalico.example/calico.yaml" },
        });
        const state = path.join(lab.clusterState, "bench");
        fs.mkdirSync(state, { recursive: true });
        fs.writeFileSync(path.join(state, "delay"), String(delay));
        const timed = async (fn: () => Promise<unknown>) => {
            const started = process.hrtime.bigint();
            await fn();
            return Number(process.hrtime.bigint() - started) / 1e9;
        };
        const instantiate = await timed(() => stack.up({ parallel: mode.parallel }));
        stack.set("workers.count", WORKERS + SCALE_OUT);
        const scaleOut = await timed(() => stack.up({ parallel: mode.parallel }));
        return { instantiate, scaleOut };
    } finally {
        lab.stopSync();
    }
}

/** Least squares over the delays: seconds per second of d (the critical path in d) and the intercept. */
function fit(points: { d: number; s: number }[]): { slope: number; intercept: number } {
    const n = points.length;
    const md = points.reduce((a, p) => a + p.d, 0) / n;
    const ms = points.reduce((a, p) => a + p.s, 0) / n;
    const slope = points.reduce((a, p) => a + (p.d - md) * (p.s - ms), 0) / points.reduce((a, p) => a + (p.d - md) ** 2, 0);
    return { slope, intercept: ms - slope * md };
}

async function main(): Promise<void> {
    const available = labAvailable();
    if (!available.ok) throw new Error(`the bench needs lab hosts: ${available.why}`);
    const modes: Mode[] = [
        { name: "scheduled (pulumi up)", delays: (process.env.BENCH_DELAYS ?? "4,16").split(",").map(Number), repeats: Number(process.env.BENCH_REPEATS ?? 2) },
    ];
    // The comparison with Tacker's way has no goal of its own (about 4 minutes): BENCH_NODE_BY_NODE=0 leaves it out.
    if (process.env.BENCH_NODE_BY_NODE !== "0") modes.push({ name: "node by node (--parallel 1)", parallel: 1, delays: [1, 3], repeats: 1 });
    console.log(`kubeadm lifecycle through the test engine: ${MASTERS} masters + ${WORKERS} workers, then +${SCALE_OUT}; stand-in init/join takes d seconds`);
    console.log(`${"".padEnd(30)} ${"instantiate".padEnd(28)} ${`scale-out by ${SCALE_OUT}`.padEnd(28)}`);
    const results: Record<string, { instantiate: ReturnType<typeof fit>; scaleOut: ReturnType<typeof fit> }> = {};
    for (const mode of modes) {
        const runs: { d: number; t: Times }[] = [];
        for (const d of mode.delays) {
            const tries: Times[] = [];
            for (let i = 0; i < mode.repeats; i++) tries.push(await measure(mode, d));
            runs.push({ d, t: { instantiate: Math.min(...tries.map((t) => t.instantiate)), scaleOut: Math.min(...tries.map((t) => t.scaleOut)) } });
        }
        const instantiate = fit(runs.map((r) => ({ d: r.d, s: r.t.instantiate })));
        const scaleOut = fit(runs.map((r) => ({ d: r.d, s: r.t.scaleOut })));
        results[mode.name] = { instantiate, scaleOut };
        const cell = (f: ReturnType<typeof fit>) => `${f.slope.toFixed(2)} d + ${f.intercept.toFixed(1)} s`.padEnd(28);
        console.log(`${mode.name.padEnd(30)} ${cell(instantiate)} ${cell(scaleOut)}   (raw: ${runs.map((r) => `d=${r.d}: ${r.t.instantiate.toFixed(1)} s / ${r.t.scaleOut.toFixed(1)} s`).join("; ")})`);
    }
    const scheduled = results[modes[0].name];
    // The slope is how much wall time grows per second of d: at most the longest chain of installs, and less
    // while a chain without installs (VMs, node preparation) is still the longer one at these delays.
    console.log(`(chains of installs: instantiate ${MASTERS} d (init, then the other masters one at a time, the workers joining meanwhile), scale-out 1 d; node by node ${MASTERS + WORKERS} d and ${SCALE_OUT} d. A slope under its chain means fixed work still dominates at these delays)`);
    console.log(
        `goals: instantiate slope ≤ ${GOALS.instantiate} d: ${scheduled.instantiate.slope.toFixed(2)} d ${scheduled.instantiate.slope <= GOALS.instantiate ? "met" : "NOT MET"}; ` +
            `scale-out slope ≤ ${GOALS.scaleOut} d: ${scheduled.scaleOut.slope.toFixed(2)} d ${scheduled.scaleOut.slope <= GOALS.scaleOut ? "met" : "NOT MET"}`,
    );
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
