// What the Pulumi SDK alone costs for a stack of this size (bench/evaluation.ts): per worker, 5 custom resources
// of 10 short properties each (the program registers 5 per worker: a component, a port, a VM and two steps),
// nothing computed, no dynamic provider. Started like the program, with its changes to the SDK's runtime
// (loader/sdkRuntime.js); workers from the same config key.
"use strict";
require("../loader/sdkRuntime");
const pulumi = require("@pulumi/pulumi");

const workers = JSON.parse(JSON.parse(process.env.PULUMI_CONFIG)["k8s-vnf:config:workers"]).count;
for (let i = 0; i < workers * 5; i++) {
    const props = {};
    for (let k = 0; k < 10; k++) props[`p${k}`] = `value-${i}-${k}`;
    new pulumi.CustomResource("bench:index:Thing", `thing-${i}`, props);
}
