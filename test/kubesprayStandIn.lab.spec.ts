import { strict as assert } from "node:assert";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as YAML from "yaml";
import { clusterVarsYaml, inventoryHosts, InventoryNode, proxyVarsYaml } from "../components/kubesprayPlan";
import type { ClusterSpec } from "../config/spec";
import { ansibleServerStep } from "../providers/kubespray/ansibleServer";
import { claimInventory, InventoryFile, loginFiles, nodeNetworkMtu, PlaybookPlace, runPlaybook, writeInventory } from "../providers/kubespray/playbooks";
import { SshSession, withSession } from "../providers/transport/ssh";
import { KUBESPRAY_STAND_IN, KUBESPRAY_STAND_IN_VERSION, packKubesprayRelease, parsePlaybookRuns } from "./support/kubesprayRelease";
import { attemptInside, failure, useLab } from "./support/labSuite";

/**
 * The lab's kubespray stand-in (test/lab/stand-ins/kubespray: the plays of kubespray v2.23.3, trimmed to what a
 * lab host can run, each file citing the release) under Debian's real Ansible (ansible-core 2.14) on lab hosts,
 * driven as k8s-vnf's steps drive a release: the AnsibleServer step's install of a release archive, the
 * inventory written by the KubesprayCluster step's own functions (hosts.yaml, group_vars, a 0600 login per
 * node), and `ansible-playbook` run through inventory.sh as the login user. Its plays reach the nodes over SSH
 * with passwords, run the kubeadm and kubectl stand-ins there, and refuse what kubespray refuses.
 */
describe("lab stand-ins: kubespray v2.23.3's plays under real Ansible", function () {
    this.timeout(180_000);
    const ANSIBLE = "ks-ansible";
    const MASTER = "ks-master";
    const worker = (i: number) => `ks-worker-${i}`;
    const suite = useLab([ANSIBLE, MASTER, worker(1), worker(2), worker(3)]);
    const ROOT = "/opt/kubespray";
    const INVENTORY = "/var/lib/k8s-vnf/inventory/ks";
    const lines: string[] = [];
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-kubespray-stand-in-"));
    let place: PlaybookPlace;

    const inside = (host: string, command: string) => suite.lab.inside(host, command);
    const node = (name: string): InventoryNode => ({ name, address: suite.lab.host(name).address });
    const log = (line: string) => {
        lines.push(line);
        suite.log(line);
    };
    /** A session to the Ansible server as its login user, as the kubespray steps open one. */
    const onAnsibleServer = <T>(fn: (s: SshSession) => Promise<T>) => withSession(suite.lab.target(ANSIBLE), {}, { step: "kubespray stand-in", log }, fn);
    /** The lines a session printed since `mark`, without their `[step host]` prefix. */
    const printed = (mark: number) => lines.slice(mark).map((l) => l.replace(/^\[[^\]]*\] /, "").replace(/^\(stderr\) /, ""));

    /** The stand-ins' shared cluster state (test/lab/stand-ins/common.sh). */
    const state = {
        nodes: () => fs.readdirSync(path.join(suite.lab.clusterState, "nodes")).sort(),
        calls: () => fs.readFileSync(path.join(suite.lab.clusterState, "calls"), "utf8").trim().split("\n"),
    };
    const callsSince = (mark: number) => state.calls().slice(mark);
    /** The runs the stand-in recorded on the Ansible server (roles/standin-record). */
    const runs = async () => parsePlaybookRuns(await inside(ANSIBLE, `cat ${ROOT}/.standin/runs.log 2>/dev/null || true`));

    /**
     * The inventory files as the KubesprayCluster step writes them (kubesprayCluster.ts inventoryFiles): hosts.yaml
     * and the cluster variables from components/kubesprayPlan.ts, the MTU and proxy files, and a 0600 login per
     * node with its password (loginFiles).
     */
    async function inventory(p: PlaybookPlace, masters: string[], workers: string[], mtu: number, proxy?: string): Promise<InventoryFile[]> {
        const all = [...masters, ...workers];
        const spec = { kubernetes: { podCidr: "10.244.0.0/16", serviceCidr: "10.96.0.0/12" }, controlPlane: { apiServerPort: 6443 } } as unknown as ClusterSpec;
        return [
            { path: "hosts.yaml", mode: "0644", content: inventoryHosts(masters.map(node), workers.map(node), Object.fromEntries(all.map((n) => [n, "ubuntu"]))) },
            { path: "group_vars/k8s_cluster/k8s-vnf.yml", mode: "0644", content: clusterVarsYaml(spec, undefined) },
            { path: "group_vars/k8s_cluster/k8s-vnf-mtu.yml", mode: "0644", content: `# Written by k8s-vnf: the node network's MTU.\ncalico_mtu: ${mtu}\ncalico_veth_mtu: ${mtu - 50}\n` },
            { path: "group_vars/all/k8s-vnf-proxy.yml", mode: "0600", content: proxy ?? "# no proxy\n" },
            ...loginFiles(p, { passwords: Object.fromEntries(all.map((n) => [n, suite.lab.password])) }, all),
        ];
    }
    let mtu = 0;
    async function writeCluster(s: SshSession, p: PlaybookPlace, masters: string[], workers: string[], extra: InventoryFile[] = [], proxy?: string): Promise<void> {
        await claimInventory(s, p);
        await writeInventory(s, p, [...(await inventory(p, masters, workers, mtu, proxy)), ...extra], [suite.lab.password]);
    }

    before(async function () {
        if (!suite.lab) this.skip();
        // What Ansible needs of a machine, which lab hosts have as a VM has them (test/lab/host-init.sh): /dev/shm
        // (Python's multiprocessing: ansible-playbook, the setup module's hardware facts) and /sys/class/net
        // (the network facts kubespray checks each node's `ip` against).
        for (const host of suite.lab.hostNames()) {
            const missing = await attemptInside(suite.lab, host, "test -d /dev/shm && test -e /sys/class/net/eth0");
            assert.equal(missing.code, 0, `lab host ${host} has no /dev/shm or /sys/class/net (test/lab/host-init.sh)`);
        }
        mtu = await withSession(suite.lab.target(MASTER), {}, { step: "mtu", log }, (m) => nodeNetworkMtu(m, suite.lab.host(MASTER).address));
    });
    after(() => fs.rmSync(tmp, { recursive: true, force: true }));
    // The Ansible output of a failed test, which the suite otherwise only keeps (and scans for secrets).
    let testStart = 0;
    beforeEach(() => {
        testStart = lines.length;
    });
    afterEach(function () {
        if (this.currentTest?.state === "failed") console.log(lines.slice(testStart).join("\n"));
    });

    it("installs as a release archive: galaxy.yml's version and the top-level playbooks; Debian's ansible-playbook fits v2.23.3's ansible-core range", async () => {
        const version = YAML.parse(fs.readFileSync(path.join(KUBESPRAY_STAND_IN, "galaxy.yml"), "utf8")).version;
        assert.equal(version, "2.23.3");
        assert.equal(`v${version}`, KUBESPRAY_STAND_IN_VERSION);
        // As GitHub serves a tag's archive: one top directory.
        const archive = path.join(tmp, packKubesprayRelease(tmp));
        const sha256 = createHash("sha256").update(fs.readFileSync(archive)).digest("hex");
        const inputs = { kubesprayRoot: ROOT, version: `v${version}`, ansibleCore: { min: "2.14.0", maxExclusive: "2.15.0" }, releaseArchive: { file: archive, sha256 } };
        const installed = await onAnsibleServer((s) => ansibleServerStep.create(s, inputs as never, undefined as never));
        assert.deepEqual(installed, { ansiblePlaybook: "/usr/bin/ansible-playbook", ansibleCoreVersion: "2.14.18", installedVersion: "v2.23.3" });
        place = { kubesprayRoot: ROOT, ansiblePlaybook: installed.ansiblePlaybook!, inventoryPath: INVENTORY, cluster: "kubespray-stand-in", timeoutMinutes: 5 };
        assert.equal((await inside(ANSIBLE, `stat -c %U ${ROOT}/cluster.yml ${ROOT}/scale.yml ${ROOT}/remove-node.yml`)).trim(), "ubuntu\nubuntu\nubuntu");
    });

    it("refused as kubespray refuses it: an inventory without kube_control_plane fails 0040-verify-settings.yml before anything changes", async () => {
        const bad: PlaybookPlace = { ...place, inventoryPath: "/var/lib/k8s-vnf/inventory/bad", cluster: "bad-layout" };
        const mark = lines.length;
        const error = await failure(suite, () =>
            onAnsibleServer(async (s) => {
                // The master listed as a worker only: kube_control_plane is empty.
                await writeCluster(s, bad, [], [MASTER, worker(1)]);
                await runPlaybook(s, bad, "cluster.yml");
            }),
        );
        assert.match(error.message, /command exited 2/);
        const out = printed(mark).join("\n");
        assert.match(out, /TASK \[kubernetes\/preinstall : Stop if either kube_control_plane or kube_node group is empty\]/);
        assert.match(out, /failed: \[ks-(master|worker-1)\] \(item=kube_control_plane\)/);
        assert.match(out, /"assertion": "groups\.get\( item \)"/);
        assert.ok(!fs.existsSync(path.join(suite.lab.clusterState, "cluster")), "no cluster");
        assert.ok(!state.calls().some((c) => / kube(adm|ctl) /.test(c)), "neither kubeadm nor kubectl ran");
        const [run] = await runs();
        assert.equal(run.playbook, "cluster.yml");
        assert.deepEqual(run.groups.kube_control_plane, []);
    });

    it("cluster.yml: the master becomes the control plane (kubeadm init of a v1beta3 config), the workers join; kubectl on the master lists them", async () => {
        const mark = state.calls().length;
        await onAnsibleServer(async (s) => {
            await writeCluster(s, place, [MASTER], [worker(1), worker(2)]);
            await runPlaybook(s, place, "cluster.yml");
        });
        const kubectl = "kubectl --kubeconfig /etc/kubernetes/admin.conf";
        assert.equal(await inside(MASTER, `${kubectl} get nodes -o name`), `node/${MASTER}\nnode/${worker(1)}\nnode/${worker(2)}\n`);
        const controlPlanes = JSON.parse(await inside(MASTER, `${kubectl} get nodes --selector=node-role.kubernetes.io/control-plane -o json`));
        assert.deepEqual(controlPlanes.items.map((n: { metadata: { name: string } }) => n.metadata.name), [MASTER]);

        // As kubespray runs kubeadm (roles/kubernetes/control-plane/tasks/kubeadm-setup.yml, roles/kubernetes/kubeadm).
        const [init, ...joins] = callsSince(mark).filter((c) => / kubeadm (init --|join|reset)/.test(c));
        assert.equal(init, `${MASTER} kubeadm init --config=/etc/kubernetes/kubeadm-config.yaml --ignore-preflight-errors=all --skip-phases=addon/coredns --upload-certs`);
        assert.deepEqual(
            joins.sort(),
            [worker(1), worker(2)].map((w) => `${w} kubeadm join --config /etc/kubernetes/kubeadm-client.conf --ignore-preflight-errors=DirAvailable--etc-kubernetes-manifests --skip-phases=`),
        );
        const config = await inside(MASTER, "cat /etc/kubernetes/kubeadm-config.yaml /etc/k8s-standin-version");
        assert.match(config, /^apiVersion: kubeadm\.k8s\.io\/v1beta3\nkind: InitConfiguration$/m);
        assert.match(config, /^kubernetesVersion: v1\.27\.10$/m);
        assert.match(config, new RegExp(`^controlPlaneEndpoint: ${suite.lab.host(MASTER).address.replace(/\./g, "\\.")}:6443$`, "m"));
        assert.match(config, /^v1\.27\.10$/m, "the download role's kube_version");
        // What the KubesprayCluster step reads next: the first master's admin kubeconfig.
        assert.match(await inside(MASTER, "cat /etc/kubernetes/admin.conf"), /^current-context: kubernetes-admin@kubernetes$/m);
        // A worker pins the CA it joined with (the kubeadm role's CA hash) and points its kubelet at the local proxy.
        const client = await inside(worker(1), "cat /etc/kubernetes/kubeadm-client.conf /etc/kubernetes/kubelet.conf");
        assert.match(client, /caCertHashes:\n\s+- sha256:[0-9a-f]{64}\n/);
        assert.match(client, /server: https:\/\/localhost:6443$/m);

        const recorded = (await runs()).pop()!;
        assert.equal(recorded.playbook, "cluster.yml");
        assert.equal(recorded.limit, null);
        assert.deepEqual(recorded.groups.kube_control_plane, [MASTER]);
        assert.deepEqual(recorded.groups.etcd, [MASTER]);
        assert.deepEqual(recorded.groups.kube_node, [worker(1), worker(2)]);
        assert.equal(recorded.vars.kube_pods_subnet, "10.244.0.0/16");
    });

    it("scale-out: playbooks/facts.yml, then scale.yml --limit=<new worker> joins that worker alone (here behind a proxy: kubespray makes no_proxy)", async () => {
        const mark = state.calls().length;
        const before = (await runs()).length;
        const printedFrom = lines.length;
        // The proxy as the step writes it (group_vars/all); nothing in the lab goes through it.
        const proxy = proxyVarsYaml({ proxy: { httpProxy: "http://proxy.invalid:3128", httpsProxy: "http://proxy.invalid:3128", noProxy: ["10.0.0.0/8"] } } as unknown as ClusterSpec);
        await onAnsibleServer(async (s) => {
            await writeCluster(s, place, [MASTER], [worker(1), worker(2), worker(3)], [], proxy);
            await runPlaybook(s, place, "playbooks/facts.yml");
            await runPlaybook(s, place, "scale.yml", [`--limit=${worker(3)}`]);
        });
        const calls = callsSince(mark);
        assert.deepEqual(calls.filter((c) => / kubeadm (init|join)/.test(c)).map((c) => c.split(" ")[0]), [worker(3)]);
        assert.deepEqual(calls.filter((c) => c.startsWith(`${worker(1)} `) || c.startsWith(`${worker(2)} `)), [], "the other workers untouched");
        assert.deepEqual(state.nodes(), [MASTER, worker(1), worker(2), worker(3)]);
        assert.deepEqual((await runs()).slice(before).map((r) => [r.playbook, r.limit]), [["playbooks/facts.yml", null], ["scale.yml", worker(3)]]);
        // roles/kubespray-defaults/tasks/no_proxy.yml, once per play that runs the role, on the Ansible server.
        assert.match(printed(printedFrom).join("\n"), new RegExp(`TASK \\[kubespray-defaults : Set no_proxy to all assigned cluster IPs and hostnames\\] \\**\nok: \\[${worker(3)} -> localhost\\]`));
    });

    it("remove-node.yml -e node=W -e skip_confirmation=true, with W's leaving inventory: drains W on the master, resets W, deletes its Node; nothing else", async () => {
        const leaving = worker(2);
        const mark = state.calls().length;
        const before = (await runs()).length;
        await onAnsibleServer(async (s) => {
            // As the program removes a worker: the cluster's inventory without it, and an inventory of it alone.
            const alone = { all: { hosts: { [leaving]: { ansible_host: node(leaving).address, ip: node(leaving).address, access_ip: node(leaving).address, ansible_user: "ubuntu" } }, children: { kube_node: { hosts: { [leaving]: {} } } } } };
            await writeCluster(s, place, [MASTER], [worker(1), worker(3)], [
                { path: `leaving/${leaving}.yaml`, mode: "0600", content: `${JSON.stringify(alone, null, 2)}\n` },
                ...loginFiles(place, { passwords: { [leaving]: suite.lab.password } }, [leaving]),
            ]);
            await runPlaybook(s, place, "remove-node.yml", ["-i", `${INVENTORY}/leaving/${leaving}.yaml`, "-e", `node=${leaving}`, "-e", "skip_confirmation=true"]);
        });
        const calls = callsSince(mark);
        const at = (pattern: RegExp) => calls.findIndex((c) => pattern.test(c));
        const drain = at(new RegExp(`^${MASTER} kubectl --kubeconfig /etc/kubernetes/admin.conf drain --force --ignore-daemonsets --grace-period 300 --timeout 360s --delete-emptydir-data ${leaving}$`));
        const stop = at(new RegExp(`^${leaving} service-kubelet stop$`));
        const del = at(new RegExp(`^${MASTER} kubectl --kubeconfig /etc/kubernetes/admin.conf delete node ${leaving}$`));
        assert.ok(drain >= 0 && stop > drain && del > stop, `drained, reset, deleted:\n${calls.join("\n")}`);
        assert.deepEqual(calls.filter((c) => / kubeadm /.test(c)), [], "v2.23.3's reset role runs no kubeadm reset");
        assert.deepEqual(calls.filter((c) => c.startsWith(`${worker(1)} `) || c.startsWith(`${worker(3)} `)), [], "no other node touched");
        assert.deepEqual(state.nodes(), [MASTER, worker(1), worker(3)]);
        // The reset role's files: kubeadm's and the kubelet's, and the binaries the download role put there.
        assert.equal(await inside(leaving, "ls -d /etc/kubernetes /var/lib/kubelet /usr/local/bin/kubeadm /usr/local/bin/kubelet /usr/local/bin/kubectl 2>&1 | grep -c 'No such file'"), "5\n");
        assert.doesNotMatch(await inside(leaving, "cat /etc/hosts"), /# Ansible inventory hosts/);
        for (const stays of [worker(1), worker(3)]) assert.equal((await attemptInside(suite.lab, stays, "test -f /etc/kubernetes/kubelet.conf")).code, 0, stays);
        const [run] = (await runs()).slice(before);
        assert.equal(run.playbook, "remove-node.yml");
        assert.equal(run.vars.node, leaving);
        assert.equal(run.vars.skip_confirmation, "true", "an -e key=value extra var is a string");
        assert.deepEqual(run.groups.kube_node, [worker(1), worker(3), leaving]);
    });

    it("remove-node.yml without node takes every node: its plays run on all hosts; unconfirmed, the confirmation fails on every host and nothing is removed", async () => {
        let mark = lines.length;
        await onAnsibleServer((s) => runPlaybook(s, place, "remove-node.yml", ["--list-hosts"]));
        // --list-hosts prints each play's pattern and hosts.
        const plays = new Map<string, string[]>();
        let current: string[] | undefined;
        for (const line of printed(mark)) {
            const play = /^\s+play #\d+ \(([^)]*)\): ([^\t]+)\t/.exec(line);
            if (play) plays.set(play[2], (current = []));
            else if (current && /^\s{6}\S+$/.test(line)) current.push(line.trim());
            else if (!/^\s+(pattern|hosts)/.test(line)) current = undefined;
        }
        const everyNode = [MASTER, worker(1), worker(3)].sort();
        assert.deepEqual(plays.get("Confirm node removal")?.sort(), everyNode);
        assert.deepEqual(plays.get("Reset node")?.sort(), [worker(1), worker(3)], "every kube_node host is drained and reset");
        assert.deepEqual(plays.get("Post node removal"), [], "kube_control_plane[1:]:etcd[1:]: none here");

        const calls = state.calls().length;
        mark = lines.length;
        const error = await failure(suite, () => onAnsibleServer((s) => runPlaybook(s, place, "remove-node.yml")));
        assert.match(error.message, /command exited 2/);
        const out = printed(mark).join("\n");
        assert.match(out, /Not waiting for response to prompt as stdin is not interactive/);
        for (const host of everyNode) assert.match(out, new RegExp(`fatal: \\[${host}\\]: FAILED! => \\{"changed": false, "msg": "Delete nodes confirmation failed"\\}`));
        assert.deepEqual(callsSince(calls).filter((c) => / kube(adm|ctl) /.test(c)), []);
        assert.deepEqual(state.nodes(), everyNode);
    });

    it("a worker that does not answer: remove-node.yml with reset_nodes=false allow_ungraceful_removal=true drains and deletes its Node on the master, never reaching it", async () => {
        const gone = worker(3);
        await suite.lab.killSshd(gone);
        const mark = state.calls().length;
        await onAnsibleServer(async (s) => {
            const alone = { all: { hosts: { [gone]: { ansible_host: node(gone).address, ip: node(gone).address, access_ip: node(gone).address, ansible_user: "ubuntu" } }, children: { kube_node: { hosts: { [gone]: {} } } } } };
            await writeCluster(s, place, [MASTER], [worker(1)], [
                { path: `leaving/${gone}.yaml`, mode: "0600", content: `${JSON.stringify(alone, null, 2)}\n` },
                ...loginFiles(place, { passwords: { [gone]: suite.lab.password } }, [gone]),
            ]);
            await runPlaybook(s, place, "remove-node.yml", ["-i", `${INVENTORY}/leaving/${gone}.yaml`, "-e", `node=${gone}`, "-e", "skip_confirmation=true", "-e", "reset_nodes=false", "-e", "allow_ungraceful_removal=true"]);
        });
        assert.deepEqual(
            callsSince(mark).filter((c) => / kubectl /.test(c)).map((c) => c.replace(/ -o go-template=.*/, " -o go-template")),
            [
                `${MASTER} kubectl --kubeconfig /etc/kubernetes/admin.conf get nodes -o go-template`,
                `${MASTER} kubectl --kubeconfig /etc/kubernetes/admin.conf drain --force --ignore-daemonsets --grace-period 300 --timeout 360s --delete-emptydir-data ${gone}`,
                `${MASTER} kubectl --kubeconfig /etc/kubernetes/admin.conf delete node ${gone}`,
            ],
        );
        assert.deepEqual(state.nodes(), [MASTER, worker(1)]);
    });

    it("the kubeadm stand-in reads kubespray's v1beta3 configuration and flags as kubeadm v1.27 does, and refuses what it refuses", async () => {
        const join = (flags: string) => attemptInside(suite.lab, worker(1), `kubeadm join --config /etc/kubernetes/kubeadm-client.conf ${flags}`);
        // A joined worker: its files fail the preflight checks, all reported at once, unless ignored.
        const again = await join("--ignore-preflight-errors=DirAvailable--etc-kubernetes-manifests --skip-phases=");
        assert.match(again.out, /\[ERROR FileAvailable--etc-kubernetes-kubelet\.conf\]: \/etc\/kubernetes\/kubelet\.conf already exists\n\t\[ERROR FileAvailable--etc-kubernetes-ssl-ca\.crt\]/);
        const ignored = await join("--ignore-preflight-errors=all --skip-phases=");
        assert.match(ignored.out, /\[WARNING FileAvailable--etc-kubernetes-kubelet\.conf\]/);
        assert.match(ignored.out, /a Node with name "ks-worker-1" and status "Ready" already exists in the cluster/, "not a preflight check");
        assert.match((await join("--ignore-preflight-errors=all,Swap")).out, /ignore-preflight-errors: Invalid value: "all,swap": don't specify individual checks if 'all' is used/);
        assert.match((await join("--skip-phases=addon/coredns")).out, /^invalid phase name: addon\/coredns$/m, "an init phase is no join phase");
        assert.match((await join("--token abcdef.0123456789abcdef")).out, /can not mix '--config' with arguments \[token\]/);
        const old = await attemptInside(suite.lab, worker(1), "sed 's#kubeadm.k8s.io/v1beta3#kubeadm.k8s.io/v1beta2#' /etc/kubernetes/kubeadm-client.conf >/root/old.conf && kubeadm join --config /root/old.conf");
        assert.match(old.out, /your configuration file uses an old API spec: "kubeadm\.k8s\.io\/v1beta2"\. Please use kubeadm v1\.22 instead/);
        assert.equal(old.code, 1);
    });
});
