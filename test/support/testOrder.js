// The test files in the order `npm test` hands them to mocha's two jobs: the longest first, so that neither
// job is left with a long one at the end while the other idles (durations on 2 cores beside another suite,
// 2026-11-28: the stand-in LCM suite 10 minutes, kubespray and kubeadm on the test engine 8–9 each, the real
// kubelet's suites 11–14 (the simple one, air-gapped, 14 alone), the other real-CLI suites 5–8 each); the long
// suites on the test engine before the real-CLI ones, which wait for the tool build on a cold machine.
// Every other test file follows, alphabetically.
const fs = require("node:fs");
const path = require("node:path");

const LONGEST_FIRST = [
    "lcm.spec.ts",
    "kubespray.lab.spec.ts",
    "kubeadm.lab.spec.ts",
    "kubesprayLcm.lab.spec.ts",
    "importRequest.lab.spec.ts",
    "realKubelet.lab.spec.ts",
    "realKubeletHa.lab.spec.ts",
    "realLcm.lab.spec.ts",
    "realStorage.lab.spec.ts",
    "realLcmSeeds.lab.spec.ts",
    "realPulumi.lab.spec.ts",
    "kubesprayStandIn.lab.spec.ts",
    "openstackApi.lab.spec.ts",
    "graph.spec.ts",
    "registry.lab.spec.ts",
];

const dir = path.join(__dirname, "..");
const all = fs.readdirSync(dir).filter((f) => f.endsWith(".spec.ts")).sort();
const missing = LONGEST_FIRST.filter((f) => !all.includes(f));
if (missing.length) throw new Error(`test/support/testOrder.js names test files that are gone: ${missing.join(", ")}`);
const ordered = [...LONGEST_FIRST, ...all.filter((f) => !LONGEST_FIRST.includes(f))];
process.stdout.write(ordered.map((f) => path.join("test", f)).join("\n") + "\n");
