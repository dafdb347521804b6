/**
 * A cluster stack on the real Pulumi CLI against the lab OpenStack API, as the real-engine suites set one up: the
 * API started for the lab, the stack created with the API's image, flavor and network under the suite's own
 * config, and both stopped with the suite (what the stack printed goes to the suite's secret scan first).
 */
import * as http from "node:http";
import { AddressInfo } from "node:net";
import * as path from "node:path";
import { kubernetesImages } from "./kubeImages";
import { LabSuite } from "./labSuite";
import { LabOpenStackApi } from "./openstackApi/server";
import { RealStack } from "./realStack";
import { builtTools } from "./tools";

/** What the real-kubelet suites give as their CNI manifest until the lab has a pod network: a ConfigMap. */
const PLACEHOLDER_CNI = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: k8s-vnf-lab-pod-network\n  namespace: kube-system\ndata:\n  cni: none yet\n";

/**
 * Makes the hosts a lab starts from now on Kubernetes nodes as a VM image would have them (the real kubelet,
 * kubeadm and kubectl; containerd preloaded with the images of `version`, made from the real binaries), and
 * serves the placeholder CNI manifest on the lab's bridge address, where the hosts reach it: its URL.
 */
export async function kubeletNodes(suite: LabSuite, version: string): Promise<string> {
    const tools = builtTools();
    const images = path.join(suite.lab.dir, "images");
    await kubernetesImages(images, tools, version);
    suite.lab.giveTools({ kube: tools.bins.kube, etcd: tools.bins.etcd, images });
    const manifests = http.createServer((_req, res) => res.writeHead(200, { "Content-Type": "application/yaml" }).end(PLACEHOLDER_CNI));
    await new Promise<void>((resolve) => manifests.listen(0, `${suite.lab.subnet}.1`, resolve));
    suite.onTeardown(() => new Promise<void>((resolve) => manifests.close(() => resolve())));
    return `http://${suite.lab.subnet}.1:${(manifests.address() as AddressInfo).port}/pod-network.yaml`;
}

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
