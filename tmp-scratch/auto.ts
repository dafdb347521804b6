import { LocalWorkspace, PulumiCommand } from "@pulumi/pulumi/automation";
(async () => {
    const cmd = await PulumiCommand.get({ root: "/tmp/k/pl", skipVersionCheck: true });
    const stack = await LocalWorkspace.createOrSelectStack({ stackName: "vnf-abc", workDir: "/work/main" }, { pulumiCommand: cmd, envVars: { PULUMI_CONFIG_PASSPHRASE: "x" } });
    await stack.setAllConfig({ "k8s-vnf:flavour": { value: "simple" }, "k8s-vnf:masters": { value: "{\"password\":\"p\"}", secret: true } }, );
    await stack.setConfig("k8s-vnf:workers.count", { value: "3" }, true as any).catch((e) => console.log("setConfig path", e.message));
    const r = await stack.up({ onEvent: (e) => console.log("event", JSON.stringify(e)), replace: ["urn:x"] });
    console.log("up", JSON.stringify(r.summary));
    await stack.destroy({});
    console.log("outputs", JSON.stringify(await stack.outputs()));
})().catch((e) => console.log("ERR", e.message));
