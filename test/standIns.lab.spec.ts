import { strict as assert } from "node:assert";
import { initConfiguration, joinConfiguration } from "../providers/kubernetes/kubeadm";
import { useLab } from "./support/labSuite";

/**
 * The lab's kubeadm stand-in refuses what real kubeadm refuses, with the configuration k8s-vnf writes: the
 * configuration API version by kubeadm release, and the preflight checks that stop a node from joining
 * again while it holds what its previous membership left (test/lab/stand-ins/bin/kubeadm cites the source).
 */
describe("lab stand-ins: kubeadm refuses what real kubeadm refuses", function () {
    this.timeout(120_000);
    const suite = useLab(["cp"]);
    const settings = { nodeName: "cp", address: "10.0.0.5", apiServerPort: 6443, endpoint: "10.0.0.5:6443", podCidr: "192.168.0.0/16", serviceCidr: "10.96.0.0/12" };
    const credentials = { token: "abcdef.0123456789abcdef", caCertHash: `sha256:${"a".repeat(64)}`, certificateKey: "b".repeat(64) };

    /** Runs the stand-in as kubeadm `version` with `config` as its --config file; its output and exit code. */
    async function kubeadm(version: string, subcommand: "init" | "join", config: string): Promise<{ out: string; code: number }> {
        const out = await suite.lab.inside(
            "cp",
            `echo ${version} >/etc/k8s-standin-version; cat >/root/kubeadm.yaml <<'EOF'\n${config}EOF\nkubeadm ${subcommand} --config /root/kubeadm.yaml 2>&1; echo "rc=$?"`,
        );
        const code = Number(/rc=(\d+)\n$/.exec(out)![1]);
        return { out: out.replace(/rc=\d+\n$/, ""), code };
    }

    it("v1beta4: unknown before v1.28, experimental (refused) until v1.31, read from v1.31", async () => {
        const at = (version: string) => kubeadm(`v${version}`, "init", initConfiguration({ ...settings, kubernetesVersion: version }));
        const old = await at("1.27.16");
        assert.equal(old.code, 1);
        assert.match(old.out, /knows no configuration API "kubeadm\.k8s\.io\/v1beta4"/);
        const experimental = await at("1.30.8");
        assert.equal(experimental.code, 1);
        assert.match(experimental.out, /experimental API spec: "kubeadm\.k8s\.io\/v1beta4" is not allowed/);
        const current = await at("1.31.4");
        assert.equal(current.code, 0, current.out);
    });

    it("a control-plane node cannot join again over its own manifests and etcd data; kubeadm reset clears both", async () => {
        const join = () => kubeadm("v1.31.4", "join", joinConfiguration({ nodeName: "cp", endpoint: settings.endpoint, controlPlane: { address: settings.address, apiServerPort: 6443 } }, credentials));
        assert.match((await join()).out, /\[ERROR FileAvailable--etc-kubernetes-kubelet\.conf\]: \/etc\/kubernetes\/kubelet\.conf already exists/);
        await suite.lab.inside("cp", "rm /etc/kubernetes/kubelet.conf");
        assert.match((await join()).out, /\[ERROR FileAvailable--etc-kubernetes-manifests-kube-apiserver\.yaml\]/);
        await suite.lab.inside("cp", "rm /etc/kubernetes/manifests/kube-apiserver.yaml");
        assert.match((await join()).out, /\[ERROR DirAvailable--var-lib-etcd\]: \/var\/lib\/etcd is not empty/);
        await suite.lab.inside("cp", "kubeadm reset -f");
        assert.equal(await suite.lab.inside("cp", "ls -A /var/lib/etcd; test -e /etc/kubernetes || echo gone"), "gone\n");
    });

    it("one cluster per lab state: a new init replaces a cluster whose control plane is gone (an entire-cluster heal), never one that has a control plane", async () => {
        const init = () => kubeadm("v1.31.4", "init", initConfiguration({ ...settings, kubernetesVersion: "1.31.4" }));
        // The reset above took the lab cluster's only control-plane node (and its etcd member) away.
        const first = await init();
        assert.equal(first.code, 0, first.out);
        // The machine's files go, its etcd member stays: the cluster still has a control plane.
        await suite.lab.inside("cp", "rm -rf /etc/kubernetes /var/lib/etcd/*");
        assert.match((await init()).out, /already holds a cluster with a control plane/);
    });
});
