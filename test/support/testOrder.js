// The test files in the order `npm test` hands them to mocha's two jobs: the longest first, so that neither
// job is left with a long one at the end while the other idles (durations on 2 cores beside another suite,
// 2026-11-28/29: the real kubelet's suites about 19 minutes each (the HA one with change_flavour), kubeadm on the
// test engine 8, the other real-CLI suites 2–8 each); the suites on the test engine first, since
// on a cold machine the real-CLI ones wait for the tool build. Three jobs were tried: each suite then took
// about 1.5 times as long (the 2 cores stay busy), so the run took no less.
// Every other test file follows, alphabetically.
const fs = require("node:fs");
const path = require("node:path");

const LONGEST_FIRST = [
    "kubeadm.lab.spec.ts",
    "realKubeletHa.lab.spec.ts",
    "realKubelet.lab.spec.ts",
    "realLcm.lab.spec.ts",
    "kubespray.lab.spec.ts",
    "realStorage.lab.spec.ts",
    "realLcmOperations.lab.spec.ts",
    "kubesprayLcm.lab.spec.ts",
    "realLcmSeeds.lab.spec.ts",
    "importRequest.lab.spec.ts",
    "registry.lab.spec.ts",
    "realPulumi.lab.spec.ts",
    "kubeadmSingleMaster.lab.spec.ts",
    "kubesprayStandIn.lab.spec.ts",
    "openstackApi.lab.spec.ts",
    "graph.spec.ts",
    "graphKubeadm.spec.ts",
];

const dir = path.join(__dirname, "..");
const all = fs.readdirSync(dir).filter((f) => f.endsWith(".spec.ts")).sort();
const missing = LONGEST_FIRST.filter((f) => !all.includes(f));
if (missing.length) throw new Error(`test/support/testOrder.js names test files that are gone: ${missing.join(", ")}`);
const ordered = [...LONGEST_FIRST, ...all.filter((f) => !LONGEST_FIRST.includes(f))];
process.stdout.write(ordered.map((f) => path.join("test", f)).join("\n") + "\n");
