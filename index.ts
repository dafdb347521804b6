import * as pulumi from "@pulumi/pulumi";
import { loadFromPulumiConfig } from "./config/load";
import { computeApiFrom } from "./config/openstackCredentials";
import { PULUMI_VERSION_RANGE } from "./config/pulumiVersion";
import { ConfigError } from "./config/spec";
import { buildVnf } from "./components/vnf";

const config = pulumi.runtime.allConfig();
const loaded = loadFromPulumiConfig(config, isSecretConfigKey, { stackName: pulumi.getStack(), baseDir: __dirname });
for (const w of loaded.warnings) pulumi.log.warn(`${w.path}: ${w.message}`);

const needsComputeApi = loaded.spec.kind === "cluster" && loaded.spec.flavour === "podaffinity";
const compute = needsComputeApi ? computeApiFrom(config, process.env) : undefined;
if (compute?.problems.length) throw new ConfigError(compute.problems, "OpenStack credentials for pod-affinity labels");

// Nothing is registered before the engine has said it is new enough; one older than the check itself refuses
// through the SDK ("does not support the RequirePulumiVersion RPC"). Under mocks there is no engine to ask.
export = pulumi.runtime.requirePulumiVersion(PULUMI_VERSION_RANGE).then(() => buildVnf(loaded.spec, { compute: compute?.api && pulumi.secret(compute.api) }));

/** Pulumi knows which config keys are encrypted; the SDK exposes it without a published type. */
function isSecretConfigKey(key: string): boolean {
    const runtime = pulumi.runtime as unknown as { isConfigSecret?: (k: string) => boolean };
    if (!runtime.isConfigSecret) throw new Error("this @pulumi/pulumi cannot tell secret config keys apart");
    return runtime.isConfigSecret(key);
}
