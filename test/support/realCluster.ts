/**
 * A cluster stack on the real Pulumi CLI against the lab OpenStack API, as the real-engine suites set one up: the
 * API started for the lab, the stack created with the API's image, flavor and network under the suite's own
 * config, and both stopped with the suite (what the stack printed goes to the suite's secret scan first).
 */
import { LabSuite } from "./labSuite";
import { LabOpenStackApi } from "./openstackApi/server";
import { RealStack } from "./realStack";

export async function realClusterStack(suite: LabSuite, cluster: string, config: (api: LabOpenStackApi) => Record<string, unknown>): Promise<{ api: LabOpenStackApi; stack: RealStack }> {
    const api = await LabOpenStackApi.start(suite.lab, { cluster });
    suite.onTeardown(() => api.stop());
    const base = { vnfName: cluster, flavour: "simple", image: api.image.name, flavor: api.flavor.name, network: { networkId: api.network.id, subnetId: api.network.subnetId } };
    const stack = await RealStack.create(cluster, { ...base, ...config(api) }, { env: api.env() });
    suite.onTeardown(async () => {
        suite.captured.push(...stack.output, ...stack.printed);
        await stack.dispose();
    });
    return { api, stack };
}

/** A kubeconfig of a ServiceAccount token at a Kubernetes VIM's endpoint, trusting its CA. */
export function tokenKubeconfig(vim: { endpoint: string; caCertificate: string }, token: string): string {
    const ca = Buffer.from(vim.caCertificate).toString("base64");
    return `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "${vim.endpoint}", certificate-authority-data: ${ca}}\nusers:\n- name: u\n  user: {token: "${token}"}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n`;
}
