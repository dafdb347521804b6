import * as pulumi from "@pulumi/pulumi";
import { loadFromPulumiConfig } from "./config/load";
import { buildVnf } from "./components/vnf";

const loaded = loadFromPulumiConfig(pulumi.runtime.allConfig(), isSecretConfigKey, { stackName: pulumi.getStack(), baseDir: __dirname });
for (const w of loaded.warnings) pulumi.log.warn(`${w.path}: ${w.message}`);

export = buildVnf(loaded.spec);

/** Pulumi knows which config keys are encrypted; the SDK exposes it without a published type. */
function isSecretConfigKey(key: string): boolean {
    const runtime = pulumi.runtime as unknown as { isConfigSecret?: (k: string) => boolean };
    if (!runtime.isConfigSecret) throw new Error("this @pulumi/pulumi cannot tell secret config keys apart");
    return runtime.isConfigSecret(key);
}
