import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import * as YAML from "yaml";
import { clusterVarsYaml, inventoryHosts, proxyVarsYaml } from "../components/kubesprayPlan";
import { configFromPulumiMap, parseVnfConfig } from "../config/load";
import { PROGRAM_VARIABLES } from "../config/kubesprayConfig";
import { ClusterSpec } from "../config/spec";
import { loginFiles } from "../providers/kubespray/playbooks";
import { Graph, PROJECT_DIR, readStackConfig, runProgram, withSecrets } from "./support/program";

/**
 * kubernetes.version and kubespray.vars reach a kubespray cluster's inventory: the example kubespray stack run
 * as `pulumi up` runs it (under mocks), and what its KubesprayCluster step is given to write. The refusals
 * themselves are in stackConfig.spec.ts; the step's own checks in kubesprayContract.spec.ts.
 */
const SECRETS = { masters: { password: "m-pw" }, workers: { password: "w-pw" }, kubespray: { password: "a-pw" }, externalLoadBalancer: { password: "lb-pw" } };

function stack(over: Record<string, Record<string, unknown>> = {}) {
    return withSecrets(readStackConfig("kubespray"), { ...SECRETS, ...over, kubespray: { ...SECRETS.kubespray, ...over.kubespray } });
}

async function clusterInputs(over: Record<string, Record<string, unknown>> = {}): Promise<Record<string, any>> {
    const { config, secretKeys } = stack(over);
    const graph = new Graph();
    await runProgram("ks", config, secretKeys, graph);
    return graph.named("ks-kubespray-cluster").inputs;
}

const isSecret = (v: any) => v && typeof v === "object" && v["4dabf18193072939515e22adb298388d"] === "1b47061264138c4ac30d75fd1eb44270";
const plain = (v: any) => (isSecret(v) ? v.value : v);

describe("kubespray: kubernetes.version and kubespray.vars reach the inventory", function () {
    this.timeout(60_000);

    it("kubernetes.version is kube_version in group_vars/k8s_cluster, spelled as the release spells it; left out, the release's default", async () => {
        // kubespray v2.28 on: no leading v (roles/validate_inventory asserts it); up to v2.27: v1.27.7.
        const current = await clusterInputs({ kubernetes: { version: "1.34.2" } });
        assert.equal(YAML.parse(current.clusterVarsYaml).kube_version, "1.34.2");
        assert.equal(current.kubernetesVersion, "1.34.2");
        const older = await clusterInputs({ kubernetes: { version: "1.27.7" }, kubespray: { version: "v2.23.3" } });
        assert.equal(YAML.parse(older.clusterVarsYaml).kube_version, "v1.27.7");
        const unset = await clusterInputs();
        assert.ok(!("kube_version" in YAML.parse(unset.clusterVarsYaml)), "no kube_version: the release installs its own default");
        assert.equal(unset.kubernetesVersion, undefined);
        assert.equal(unset.varsFile, undefined, "no vars: the step writes a file that sets none");
    });

    it("kubespray.vars are written as YAML Ansible reads back as given; their secrets are a secret input, masked in what a diff or plan shows", async () => {
        const vars = {
            kube_network_plugin: "cilium",
            kube_network_node_prefix: 25,
            upstream_dns_servers: ["192.0.2.53"],
            kube_oidc_username_prefix: "no",
            kubelet_config_extra_args: { cpuManagerPolicy: "static" },
            argocd_admin_password: "argo-pw-not-in-clear",
        };
        const inputs = await clusterInputs({ kubespray: { vars } });
        assert.ok(isSecret(inputs.varsFile), "the file is a secret input");
        const file = plain(inputs.varsFile);
        // PyYAML reads YAML 1.1: "no" unquoted would be false there.
        assert.deepEqual(YAML.parse(file.yaml, { version: "1.1" }), vars);
        assert.match(file.yaml, /^kube_oidc_username_prefix: "no"$/m);
        assert.deepEqual(file.secrets, ["argo-pw-not-in-clear"], "redacted from what the playbooks print");
        assert.deepEqual(inputs.vars, { ...vars, argocd_admin_password: "[secret]" }, "what a diff shows");
        assert.ok(inputs.remoteActions.length > 0 && !JSON.stringify(inputs.remoteActions).includes("argo-pw"), "nor in the plan");
        assert.ok(!JSON.stringify(inputs.clusterVarsYaml).includes("argo-pw"));
        // The plan lists cluster.yml again when the vars change; a secret's change alone moves no digest.
        const again = (i: Record<string, any>) => i.remoteActions.find((a: { action: string }) => a.action.startsWith("cluster.yml again")).digest;
        assert.notEqual(again(await clusterInputs({ kubespray: { vars: { ...vars, kube_network_plugin: "calico" } } })), again(inputs));
        assert.equal(again(await clusterInputs({ kubespray: { vars: { ...vars, argocd_admin_password: "another-pw" } } })), again(inputs));
    });

    it("a secret among kubespray.vars must be a Pulumi secret", async () => {
        const { config, secretKeys } = stack({ kubespray: { vars: { argocd_admin_password: "argo-pw-not-in-clear" } } });
        await assert.rejects(
            runProgram("ks", config, secretKeys.filter((k) => k !== "k8s-vnf:kubespray"), new Graph()),
            (e: Error) => /kubespray\.vars\.argocd_admin_password: must be a Pulumi secret/.test(e.message) && !e.message.includes("argo-pw-not-in-clear"),
        );
    });

    it("every variable k8s-vnf writes into the inventory is one kubespray.vars refuses, naming what sets it", () => {
        const { raw } = configFromPulumiMap(stack({ kubernetes: { version: "1.34.2" }, proxy: { httpProxy: "http://proxy.example:3128", httpsProxy: "http://proxy.example:3128", noProxy: [".example"] } }).config);
        const spec = parseVnfConfig(raw, { stackName: "ks", baseDir: PROJECT_DIR }).spec as ClusterSpec;
        const node = { name: "ks-master-0", address: "10.10.0.5" };
        const place = { kubesprayRoot: "/opt/kubespray", ansiblePlaybook: "/usr/bin/ansible-playbook", inventoryPath: "/var/lib/k8s-vnf/inventory/ks", cluster: "ks", timeoutMinutes: 60 };
        const written = [
            clusterVarsYaml(spec, { address: "10.10.0.9", port: 8383, otherAddresses: ["172.24.4.9"] }),
            proxyVarsYaml(spec)!,
            ...loginFiles(place, { privateKey: "key\n", passwords: { [node.name]: "pw" } }, [node.name]).filter((f) => f.path.endsWith(".yml")).map((f) => f.content),
            ...loginFiles(place, { passwords: { [node.name]: "pw" } }, [node.name]).map((f) => f.content),
        ];
        const names = new Set(written.flatMap((text) => Object.keys(YAML.parse(text) ?? {})));
        for (const host of Object.values(YAML.parse(inventoryHosts([node], [], { [node.name]: "ubuntu" })).all.hosts) as Record<string, unknown>[]) for (const name of Object.keys(host)) names.add(name);
        // The step's own files (the node network's MTU, the inventory's known_hosts), as its source writes them.
        const step = fs.readFileSync(path.join(PROJECT_DIR, "providers/kubespray/kubesprayCluster.ts"), "utf8");
        for (const [, name] of step.matchAll(/(?:`|\\n)([a-z_]+): \$\{/g)) names.add(name);
        assert.ok(names.has("kube_version") && names.has("calico_mtu") && names.has("ansible_ssh_common_args") && names.has("ansible_become_password"), [...names].join(" "));
        assert.deepEqual([...names].filter((n) => !(n in PROGRAM_VARIABLES)), []);
    });
});
