/**
 * A kubespray cluster (seed 001's flavour) on lab hosts, driven as a user drives it: stack config, then the
 * real Pulumi CLI, engine and plugins against the lab OpenStack API, whose servers are lab hosts. The Ansible
 * server is a lab host running Debian's real Ansible; the release it installs is the lab's kubespray stand-in
 * (test/lab/stand-ins/kubespray: real plays trimmed from v2.23.3), given as the package's release archive as
 * an air-gapped site gives it. Its plays reach every node over SSH with the inventory the step wrote, and
 * record what ran where (.standin/runs.log). The external load balancer runs real HAProxy in front of the
 * masters' API, on its two ports' addresses (the outside one, and the one on the cluster network). The stack
 * names a Kubernetes version of the release's list and a kubespray variable (kubespray.vars): the real
 * ansible-inventory reads both from the inventory the step wrote, and the nodes get that version.
 *
 * A worker's heal is tested through the LCM service (kubesprayLcm.lab.spec.ts), on the same plays.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as YAML from "yaml";
import { clusterState } from "./support/clusterState";
import { KUBESPRAY_STAND_IN_VERSION as VERSION, packKubesprayRelease, parsePlaybookRuns, PlaybookRun } from "./support/kubesprayRelease";
import { failure, skipAfterFirstFailure, useLab } from "./support/labSuite";
import { LabOpenStackApi } from "./support/openstackApi/server";
import { realClusterStack } from "./support/realCluster";
import { RealStack } from "./support/realStack";
import { useBuiltTools } from "./support/tools";

const ROOT = "/opt/kubespray";
const INVENTORY = "/var/lib/k8s-vnf/inventory/ks";
const ANSIBLE = "ks-ansible";
const LB = "ks-external-lb";
/** A Kubernetes version kubespray v2.23.3 installs (its checksums list 1.25.0–1.27.10), and a variable it documents. */
const KUBERNETES_VERSION = "1.27.7";
const VARS = { upstream_dns_servers: ["192.0.2.53"] };

describe("kubespray cluster on lab hosts (seed 001's flavour): the real Pulumi CLI and plugins, real Ansible and HAProxy", function () {
    useBuiltTools();
    this.timeout(600_000);
    let api: LabOpenStackApi;
    const suite = useLab([], { secrets: () => [api?.credentials.password ?? ""] });
    let dir: string;
    let stack: RealStack;
    let state: ReturnType<typeof clusterState>;
    const inside = (host: string, command: string) => suite.lab.inside(host, command);
    const runs = async (): Promise<PlaybookRun[]> => parsePlaybookRuns(await inside(ANSIBLE, `cat ${ROOT}/.standin/runs.log 2>/dev/null || true`));
    const lbConfig = () => inside(LB, "cat /etc/haproxy/haproxy.cfg");
    const worker = (i: number) => `ks-worker-${i}`;

    skipAfterFirstFailure();

    before(async function () {
        if (!suite.lab) this.skip();
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-kubespray-"));
        suite.onTeardown(() => fs.rmSync(dir, { recursive: true, force: true }));
        const releaseFile = packKubesprayRelease(path.join(dir, "package"));
        const password = suite.lab.password;
        ({ api, stack } = await realClusterStack(suite, "ks", () => ({
            packageDir: path.join(dir, "package"),
            masters: { count: 1, password },
            workers: { count: 2, maxCount: 5, password },
            kubernetes: { drainTimeout: 5, version: KUBERNETES_VERSION },
            kubespray: { username: "ubuntu", password, version: VERSION, releaseFile, server: {}, vars: VARS },
            externalLoadBalancer: { password, apiPort: 8383 },
        })));
        state = clusterState(suite.lab, "ks");
    });

    it("instantiate: the release from the package on the Ansible server, HAProxy on the LB, cluster.yml over the inventory the stack made", async () => {
        await stack.up();
        assert.deepEqual((await runs()).map((r) => r.playbook), ["cluster.yml"]);
        const [run] = await runs();
        assert.deepEqual(run.groups.kube_control_plane, ["ks-master-0"]);
        assert.deepEqual(run.groups.etcd, ["ks-master-0"]);
        assert.deepEqual(run.groups.kube_node, [worker(0), worker(1)]);
        assert.equal(run.limit, null);
        const apiLb = run.vars.loadbalancer_apiserver as { address: string; port: number };
        assert.equal(apiLb.port, 8383);
        assert.notEqual(apiLb.address, suite.lab.host(LB).address, "the nodes reach the LB on its cluster-side port");
        assert.match(await inside(LB, "ip -o -4 addr show dev eth0"), new RegExp(` ${apiLb.address.replace(/\./g, "\\.")}/`), "an address of the LB VM");
        assert.ok((run.vars.supplementary_addresses_in_ssl_keys as string[]).includes(suite.lab.host(LB).address), "its outside address is in the API certificate");
        assert.deepEqual(state.nodes(), ["ks-master-0", worker(0), worker(1)]);

        const files = await inside(ANSIBLE, `cd ${INVENTORY} && find . -type f ! -path './logs/*' -printf '%m %u %p\\n' | sort`);
        assert.match(files, /^600 ubuntu \.\/host_vars\/ks-worker-1\/k8s-vnf-login\.yml$/m, "a password only in a 0600 file of its node");
        assert.match(files, /^644 ubuntu \.\/hosts\.yaml$/m);
        const hostsYaml = await inside(ANSIBLE, `cat ${INVENTORY}/hosts.yaml`);
        assert.ok(!hostsYaml.includes(suite.lab.password), "no password in hosts.yaml");
        assert.equal(YAML.parse(hostsYaml).all.hosts["ks-worker-0"].ansible_host, suite.lab.host(worker(0)).address);
        // kubernetes.version as v2.23.3 spells it (group_vars/k8s_cluster) and kubespray.vars (group_vars/all, 0600),
        // as Ansible reads the inventory for a node (only those two printed: the node's login is there too).
        assert.match(files, /^600 ubuntu \.\/group_vars\/all\/k8s-vnf-vars\.yml$/m);
        const pick = "import json,sys; v=json.load(sys.stdin); print(json.dumps({k: v.get(k) for k in ['kube_version', 'upstream_dns_servers']}))";
        const seen = JSON.parse(await inside(ANSIBLE, `ansible-inventory -i ${INVENTORY}/hosts.yaml --host ${worker(0)} | python3 -c "${pick}"`));
        assert.deepEqual(seen, { kube_version: `v${KUBERNETES_VERSION}`, ...VARS });
        assert.equal(run.vars.kube_version, `v${KUBERNETES_VERSION}`, "what cluster.yml ran with");
        assert.equal((await inside(worker(1), "cat /etc/k8s-standin-version")).trim(), `v${KUBERNETES_VERSION}`, "the release's download took that version");

        const cfg = await lbConfig();
        assert.match(cfg, new RegExp(`server ks-master-0 ${suite.lab.host("ks-master-0").address.replace(/\./g, "\\.")}:6443 check check-ssl verify none`));
        assert.equal((await inside(LB, "haproxy -c -f /etc/haproxy/haproxy.cfg >/dev/null && echo valid")).trim(), "valid");
        // The API through the LB's outside address: real HAProxy forwards to the master's API server.
        const subject = await inside(ANSIBLE, `echo | openssl s_client -connect ${suite.lab.host(LB).address}:8383 2>/dev/null | openssl x509 -noout -subject`);
        assert.match(subject, /CN ?= ?kube-apiserver/);

        const outputs = stack.outputs();
        const kubeconfig = YAML.parse(outputs.kubeconfig as string);
        assert.equal(kubeconfig.clusters[0].cluster.server, `https://${suite.lab.host(LB).address}:8383`, "the kubeconfig points at the LB");
        assert.ok(kubeconfig.clusters[0].cluster["certificate-authority-data"], "and keeps the cluster's CA");
    });

    it("a second up runs no playbook and changes nothing", async () => {
        const before = (await runs()).length;
        const since = stack.steps.length;
        await stack.up();
        assert.deepEqual(stack.steps.slice(since).filter((s) => s.op !== "same").map((s) => `${s.op} ${s.name}`), []);
        assert.equal((await runs()).length, before);
    });

    it("scale-out by 2: facts.yml over every host, then scale.yml limited to the two new workers; only they join", async () => {
        const before = (await runs()).length;
        const callsBefore = state.calls().length;
        stack.set("workers.count", 4);
        await stack.up();
        const added = (await runs()).slice(before);
        assert.deepEqual(added.map((r) => [r.playbook, r.limit]), [["playbooks/facts.yml", null], ["scale.yml", `${worker(2)},${worker(3)}`]]);
        assert.deepEqual(added[1].groups.kube_node, [0, 1, 2, 3].map(worker));
        const joins = state.calls().slice(callsBefore).filter((c) => / kubeadm join /.test(c)).map((c) => c.split(" ")[0]);
        assert.deepEqual(joins.sort(), [worker(2), worker(3)]);
        assert.deepEqual(state.nodes(), ["ks-master-0", ...[0, 1, 2, 3].map(worker)]);
        assert.match(await lbConfig(), /server ks-worker-3 /);
    });

    it("a failed scale.yml fails the step with what failed and the PLAY RECAP; the next up runs it again and the node joins", async () => {
        // A Node of that name is already registered: kubeadm join refuses it, as the real one does.
        state.addNode(worker(4), "NotReady");
        stack.set("workers.count", 5);
        const error = await failure(suite, () => stack.up());
        assert.match(error.message, /ansible-playbook scale\.yml failed/);
        assert.match(error.message, /^\s*fatal: \[ks-worker-4\]/m, "what failed where");
        assert.match(error.message, /PLAY RECAP[\s\S]*ks-worker-4 +: ok=\d+ +changed=\d+ +unreachable=0 +failed=1/);
        assert.doesNotMatch(error.message, /--- \d+\.\d+s$/m, "the recap, not profile_tasks' timings after it");
        assert.ok(!stack.state().some((r) => r.urn.endsWith("::ks-kubespray-worker-4-member")), "no membership for a node that did not join");

        state.removeNode(worker(4));
        const before = (await runs()).length;
        await stack.up();
        assert.deepEqual((await runs()).slice(before).map((r) => [r.playbook, r.limit]), [["playbooks/facts.yml", null], ["scale.yml", worker(4)]]);
        assert.equal(state.node(worker(4)).status, "Ready");
    });

    it("scale-in by 1: the worker is drained, then remove-node.yml runs for it alone; its VM goes; the LB and the inventory forget it", async () => {
        const before = (await runs()).length;
        const callsBefore = state.calls().length;
        stack.set("workers.count", 4);
        await stack.up();
        const added = (await runs()).slice(before);
        assert.deepEqual(added.map((r) => r.playbook), ["remove-node.yml"]);
        assert.equal(added[0].vars.node, worker(4));
        assert.equal(added[0].vars.skip_confirmation, "true", "as `-e name=value` sets it: a string");
        const calls = state.calls().slice(callsBefore);
        const drain = calls.findIndex((c) => / kubectl .*\bdrain\b/.test(c) && c.includes(worker(4)));
        // kubespray's reset role stops the kubelet and removes its files itself (no `kubeadm reset`).
        const reset = calls.findIndex((c) => c.startsWith(`${worker(4)} service-kubelet stop`));
        assert.ok(drain >= 0 && reset > drain, `drained, then reset:\n${calls.join("\n")}`);
        assert.ok(!calls.some((c) => / service-kubelet stop/.test(c) && !c.startsWith(worker(4))), "no other node reset");
        assert.deepEqual(state.nodes(), ["ks-master-0", ...[0, 1, 2, 3].map(worker)]);
        assert.ok(!suite.lab.hostNames().includes(worker(4)));
        assert.doesNotMatch(await lbConfig(), /ks-worker-4/);
        assert.doesNotMatch(await inside(ANSIBLE, `cat ${INVENTORY}/hosts.yaml; ls ${INVENTORY}/host_vars ${INVENTORY}/leaving 2>/dev/null || true`), /ks-worker-4/);
        assert.match(await inside(ANSIBLE, `ls ${INVENTORY}/host_vars`), /ks-worker-3/, "the other nodes keep their logins");
    });

    it("an inventory path holding another cluster's inventory is refused, naming it; nothing of it is touched", async () => {
        await inside(ANSIBLE, "mkdir -p /var/lib/k8s-vnf/inventory/other && echo other > /var/lib/k8s-vnf/inventory/other/.k8s-vnf-cluster");
        stack.set("kubespray.inventoryPath", "/var/lib/k8s-vnf/inventory/other");
        const error = await failure(suite, () => stack.up());
        assert.match(error.message, /holds the inventory of another cluster \(other\)/);
        stack.set("kubespray.inventoryPath", INVENTORY);
    });

    it("destroy: every VM goes, the Ansible server with it", async () => {
        await stack.destroy();
        assert.deepEqual(api.servers(), []);
        assert.deepEqual(suite.lab.hostNames(), []);
    });
});
