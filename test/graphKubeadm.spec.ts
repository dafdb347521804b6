/** Resource graphs under mocks: Kubernetes with kubeadm (its steps, their inputs and the order they chain). */
import { strict as assert } from "node:assert";
import * as YAML from "yaml";
import { configFromPulumiMap, parseVnfConfig } from "../config/load";
import { Graph, INIT_OUTPUTS, PROJECT_DIR, readStackConfig, runProgram, withSecrets } from "./support/program";
import { build, dependencyNames, isSecret, PASSWORDS, T } from "./support/graphBuild";

describe("resource graphs: Kubernetes with kubeadm", () => {
    it("simple: a node step per VM, one init on the first master, a membership per node, no HAProxy; outputs secret", async () => {
        const { graph, outputs } = await build("simple");
        assert.deepEqual(graph.ofType(T.node).map((r) => r.inputs.nodeName).sort(), ["simple-master-0", "simple-worker-0", "simple-worker-1"]);
        assert.equal(graph.count(T.lb), 0);
        assert.equal(graph.count(T.labels), 0, "no labels without pod affinity or a zone");
        const init = graph.named("simple-kubeadm-init");
        assert.equal(init.inputs.endpoint, `${outputs.masterAddresses[0]}:6443`);
        assert.equal(init.inputs.nodeName, "simple-master-0");
        assert.deepEqual(init.opts.additionalSecretOutputs, ["connection", "kubeconfig", "joinToken", "caCertHash"]);
        assert.equal(init.opts.deleteBeforeReplace, true);
        assert.ok(isSecret(init.inputs.connection), "the login is secret");
        assert.equal(graph.count(T.master), 1);
        assert.equal(graph.count(T.worker), 2);
        const worker = graph.named("simple-kubeadm-worker-1-member");
        assert.equal(worker.inputs.drainTimeoutSeconds, 300);
        assert.ok(isSecret(worker.inputs.controlPlanes), "the masters' logins are secret");
        assert.ok(worker.opts.additionalSecretOutputs?.includes("controlPlanes"));
        assert.equal(worker.opts.deleteBeforeReplace, true, "one node cannot be joined twice");
        assert.equal(graph.named("simple-kubeadm").parent, "simple");
        assert.equal(graph.named("simple-kubeadm-worker-1-node").parent, "simple-kubeadm");
        assert.deepEqual(dependencyNames(graph.named("simple-kubeadm-master-0-member")), ["simple-kubeadm-init"]);
    });

    it("the pod network is a step of its own after the init, on the masters' logins (secret); workers join after it", async () => {
        const caCertHash = `sha256:${"cd".repeat(32)}`;
        const { graph } = await build("complex", undefined, { [T.init]: { ...INIT_OUTPUTS, caCertHash } });
        assert.equal(graph.count(T.podNetwork), 1);
        const network = graph.named("complex-kubeadm-pod-network");
        assert.match(network.inputs.cniManifest, /^https:\/\/\S+\/calico\.yaml$/);
        assert.equal(network.inputs.caCertHash, caCertHash, "the cluster it belongs to, from the init");
        assert.ok(isSecret(network.inputs.controlPlanes) && isSecret(network.inputs.proxy));
        for (const node of graph.ofType(T.node)) assert.ok(isSecret(node.inputs.proxy) && node.opts.additionalSecretOutputs?.includes("proxy"), `${node.name}: a proxy URL may hold a password`);
        assert.deepEqual(network.opts.additionalSecretOutputs, ["connection", "proxy", "controlPlanes"]);
        assert.equal((network.opts.deletedWith as { constructor: { name: string } }).constructor.name, "KubeadmInit");
        assert.equal(graph.named("complex-kubeadm-init").inputs.cniManifest, undefined, "the init no longer applies it");
        for (const w of graph.ofType(T.worker)) assert.deepEqual(dependencyNames(w), ["complex-kubeadm-pod-network"], w.name);
    });

    it("kubernetes.imageRepository reaches the init (kubeadm's imageRepository) and every node's preparation (its sandbox image); left out, neither has one", async () => {
        const mirror = "registry.example:5000/k8s";
        const { graph } = await build("complex", (raw) => (raw.kubernetes = { ...raw.kubernetes, imageRepository: mirror }));
        assert.equal(graph.named("complex-kubeadm-init").inputs.imageRepository, mirror);
        const nodes = graph.ofType(T.node);
        assert.equal(nodes.length, 5);
        for (const node of nodes) assert.equal(node.inputs.imageRepository, mirror, node.name);
        const plain = (await build("complex")).graph;
        assert.equal(plain.named("complex-kubeadm-init").inputs.imageRepository, undefined);
        for (const node of plain.ofType(T.node)) assert.equal(node.inputs.imageRepository, undefined, node.name);
    });

    it("values a step computes reach its dependents and the stack outputs (the SDK makes Outputs only for registered keys)", async () => {
        const caCertHash = `sha256:${"ab".repeat(32)}`;
        const { graph, outputs } = await build("complex", undefined, { [T.init]: { ...INIT_OUTPUTS, caCertHash } });
        const members = [...graph.ofType(T.master), ...graph.ofType(T.worker)];
        assert.equal(members.length, 5);
        for (const m of members) assert.equal(m.inputs.caCertHash?.value ?? m.inputs.caCertHash, caCertHash, m.name);
        assert.equal(outputs.kubeconfig, INIT_OUTPUTS.kubeconfig);
    });

    it("memberships and labels go with the cluster (deletedWith its init): a destroy does not drain node by node", async () => {
        const { graph } = await build("podaffinity");
        const withInit = [...graph.ofType(T.master), ...graph.ofType(T.worker), ...graph.ofType(T.labels)];
        assert.equal(withInit.length, 5 + 2);
        for (const r of withInit) assert.equal((r.opts.deletedWith as { constructor: { name: string } } | undefined)?.constructor.name, "KubeadmInit", r.name);
        for (const r of [...graph.ofType(T.node), ...graph.ofType(T.lb)]) assert.equal(r.opts.deletedWith, undefined, r.name);
    });

    it("the chain VM → node → membership carries the VM id, so replacing a VM replaces its steps in order", async () => {
        const { graph } = await build("complex");
        for (const [role, i] of [["master", 1], ["worker", 0]] as const) {
            const vmId = `complex-${role}-${i}-vm-id`;
            assert.equal(graph.named(`complex-kubeadm-${role}-${i}-node`).inputs.vmId, vmId);
            assert.equal(graph.named(`complex-kubeadm-${role}-${i}-member`).inputs.vmId, vmId);
        }
        assert.equal(graph.named("complex-kubeadm-master-2-api-lb").inputs.vmId, "complex-master-2-vm-id");
        assert.equal(graph.named("complex-kubeadm-init").inputs.vmId, undefined, "the cluster does not go with its first VM (a master heal keeps it)");
    });

    it("complex: HAProxy and keepalived on every master over every master, VRRP priority by index; init on the VIP; masters join one at a time, master-0 last", async () => {
        const { graph, outputs } = await build("complex");
        const lbs = [0, 1, 2].map((i) => graph.named(`complex-kubeadm-master-${i}-api-lb`));
        for (const [i, lb] of lbs.entries()) {
            assert.equal(lb.inputs.vip, "10.10.0.10");
            assert.equal(lb.inputs.routerId, 10);
            assert.equal(lb.inputs.priority, 150 - i);
            assert.equal(lb.inputs.frontendPort, 16443);
            assert.deepEqual(lb.inputs.backends, outputs.masterAddresses.map((address: string, j: number) => ({ name: `complex-master-${j}`, address })));
        }
        assert.equal(graph.named("complex-kubeadm-init").inputs.endpoint, "10.10.0.10:16443");
        assert.deepEqual(dependencyNames(graph.named("complex-kubeadm-init")), ["complex-kubeadm-master-0-node", "complex-kubeadm-master-0-api-lb"]);
        assert.deepEqual(dependencyNames(graph.named("complex-kubeadm-master-1-member")), ["complex-kubeadm-init"]);
        assert.deepEqual(dependencyNames(graph.named("complex-kubeadm-master-2-member")), ["complex-kubeadm-init", "complex-kubeadm-master-1-member"]);
        assert.deepEqual(dependencyNames(graph.named("complex-kubeadm-master-0-member")), ["complex-kubeadm-init", "complex-kubeadm-master-2-member"]);
        const peers = graph.named("complex-kubeadm-master-1-member").inputs.peers;
        assert.ok(isSecret(peers));
        assert.deepEqual(peers.value.map((p: any) => p.name), ["complex-master-0", "complex-master-2"]);
    });

    it("podaffinity: each worker labelled with its compute host (CIS-node), read with the stack's OpenStack credentials, kept secret", async () => {
        const { graph } = await build("podaffinity");
        assert.equal(graph.count(T.labels), 2);
        const labels = graph.named("podaffinity-kubeadm-worker-1-labels");
        assert.equal(labels.inputs.computeHostLabel, "CIS-node");
        assert.equal(labels.inputs.vmId, "podaffinity-worker-1-vm-id");
        assert.ok(isSecret(labels.inputs.compute));
        assert.equal(labels.inputs.compute.value.password, "os-pw-not-in-clear");
        assert.ok(labels.opts.additionalSecretOutputs?.includes("compute"));
    });

    it("podaffinity without OpenStack credentials is refused, naming the config keys and variables", async () => {
        const { config, secretKeys } = withSecrets(readStackConfig("podaffinity"), PASSWORDS.podaffinity);
        const saved = Object.fromEntries(["OS_AUTH_URL", "OS_USERNAME", "OS_PASSWORD", "OS_PROJECT_NAME", "OS_TENANT_NAME"].map((k) => [k, process.env[k]]));
        for (const k of Object.keys(saved)) delete process.env[k];
        try {
            const graph = new Graph();
            await assert.rejects(runProgram("podaffinity", config, secretKeys, graph), /openstack:authUrl: not set \(nor OS_AUTH_URL, nor openstack:cloud \/ OS_CLOUD\)[\s\S]*openstack:password/);
            assert.equal(graph.resources.length, 0);
        } finally {
            for (const [k, v] of Object.entries(saved)) if (v !== undefined) process.env[k] = v;
        }
    });

    it("kubespray: the release on the Ansible server, HAProxy on the LB before cluster.yml, an inventory from the stack, a membership per worker", async () => {
        const { graph, outputs } = await build("kubespray");
        const plain = (v: any) => (isSecret(v) ? v.value : v);
        assert.deepEqual(
            graph.resources.filter((r) => r.type.includes("dynamic/k8s-vnf")).map((r) => r.type.split(":").pop()).sort(),
            ["AnsibleServer", "ExternalLoadBalancer", "KubesprayCluster", "KubesprayWorker", "KubesprayWorker"],
            "kubespray installs Kubernetes itself: no kubeadm steps",
        );
        const ansible = graph.named("kubespray-kubespray-ansible");
        assert.equal(ansible.inputs.version, "v2.31.0");
        assert.deepEqual(ansible.inputs.ansibleCore, { min: "2.18.0", maxExclusive: "2.19.0" });
        assert.equal(plain(ansible.inputs.connection).host, outputs.ansibleServerAddress, "the VM the stack made");
        assert.equal(plain(ansible.inputs.connection).password, "a-pw");

        const lb = graph.named("kubespray-kubespray-external-lb");
        assert.equal(lb.inputs.apiPort, 8383);
        assert.deepEqual(lb.inputs.controlPlanes, [{ name: "kubespray-master-0", address: outputs.masterAddresses[0] }]);
        assert.deepEqual(lb.inputs.workers.map((w: { address: string }) => w.address), outputs.workerAddresses);

        const cluster = graph.named("kubespray-kubespray-cluster");
        assert.deepEqual(dependencyNames(cluster), ["kubespray-kubespray-external-lb"], "HAProxy runs before cluster.yml");
        assert.equal(cluster.inputs.kubesprayRoot, "/opt/kubespray");
        assert.equal(cluster.inputs.inventoryPath, "/var/lib/k8s-vnf/inventory/kubespray");
        assert.equal(cluster.inputs.factsPlaybook, "playbooks/facts.yml");
        const hosts = YAML.parse(cluster.inputs.hostsYaml);
        assert.deepEqual(Object.keys(hosts.all.children.kube_control_plane.hosts), ["kubespray-master-0"]);
        assert.deepEqual(Object.keys(hosts.all.children.etcd.hosts), ["kubespray-master-0"]);
        assert.deepEqual(Object.keys(hosts.all.children.kube_node.hosts), ["kubespray-worker-0", "kubespray-worker-1"]);
        assert.deepEqual(Object.keys(hosts.all.children.k8s_cluster.children).sort(), ["calico_rr", "kube_control_plane", "kube_node"]);
        assert.doesNotMatch(cluster.inputs.hostsYaml, /pw|password/, "no credential in hosts.yaml");
        const vars = YAML.parse(cluster.inputs.clusterVarsYaml);
        const lbInside = graph.named("kubespray-external-lb-port-1");
        assert.equal(vars.kube_pods_subnet, "192.168.0.0/16");
        assert.equal(vars.loadbalancer_apiserver.port, 8383);
        assert.match(vars.loadbalancer_apiserver.address, /^10\.10\.0\.\d+$/);
        assert.notEqual(vars.loadbalancer_apiserver.address, outputs.externalLoadBalancerAddress, "the nodes reach it on its cluster-network port");
        assert.ok(vars.supplementary_addresses_in_ssl_keys.includes(outputs.externalLoadBalancerAddress), "its outside address is in the API certificate");
        assert.ok(lbInside);
        assert.ok(isSecret(cluster.inputs.logins) && isSecret(cluster.inputs.firstMaster));
        assert.deepEqual(plain(cluster.inputs.logins), { passwords: { "kubespray-master-0": "m-pw", "kubespray-worker-0": "w-pw", "kubespray-worker-1": "w-pw" } });
        assert.deepEqual(cluster.opts.additionalSecretOutputs, ["connection", "proxyVarsYaml", "varsFile", "logins", "firstMaster", "adminKubeconfig"]);

        const member = graph.named("kubespray-kubespray-worker-1-member");
        assert.equal(member.inputs.nodeName, "kubespray-worker-1");
        assert.deepEqual(member.inputs.removeNodeVars, ["skip_confirmation=true"]);
        assert.deepEqual(plain(member.inputs.login), { passwords: { "kubespray-worker-1": "w-pw" } }, "a worker's login is its own");
        assert.equal(member.opts.deleteBeforeReplace, true, "a healed worker leaves before its new VM joins under the same name");
        assert.equal((member.opts.deletedWith as { constructor: { name: string } }).constructor.name, "KubesprayCluster");
        assert.deepEqual(dependencyNames(member), ["kubespray-kubespray-cluster"]);

        assert.ok(isSecret(outputs.kubeconfig) || typeof outputs.kubeconfig === "string");
        const kubeconfig = YAML.parse(plain(outputs.kubeconfig));
        assert.equal(kubeconfig.clusters[0].cluster.server, `https://${outputs.externalLoadBalancerAddress}:8383`, "the kubeconfig points at the LB");
        assert.equal(kubeconfig.clusters[0].cluster["certificate-authority-data"], "Q0E=", "and keeps the cluster's CA");
    });

    it("kubespray: an Ansible server the request names is used as it is; with the stack's key the nodes' passwords only unlock sudo", async () => {
        const key = "-----BEGIN OPENSSH PRIVATE KEY-----\nstack-key-not-in-clear\n-----END OPENSSH PRIVATE KEY-----\n";
        const { graph } = await build("kubespray", (raw) => {
            raw.kubespray = { ...raw.kubespray, host: "10.10.0.9", server: undefined };
            raw.ssh = { privateKey: key };
        });
        assert.equal(graph.ofType(T.instance).filter((r) => r.name.includes("ansible")).length, 0, "no Ansible VM");
        const ansible = graph.named("kubespray-kubespray-ansible");
        assert.equal(ansible.inputs.connection.value.host, "10.10.0.9");
        assert.equal(ansible.inputs.vmId, undefined);
        const passwords = { "kubespray-master-0": "m-pw", "kubespray-worker-0": "w-pw", "kubespray-worker-1": "w-pw" };
        assert.deepEqual(graph.named("kubespray-kubespray-cluster").inputs.logins.value, { privateKey: key, passwords }, "the key to log in, the passwords for sudo");
        assert.deepEqual(graph.named("kubespray-kubespray-worker-0-member").inputs.login.value, { privateKey: key, passwords: { "kubespray-worker-0": "w-pw" } });
    });

    it("kubespray scale-out: the new worker's VM and membership are added; the cluster step updates with it in its inventory", async () => {
        const before = await build("kubespray");
        const after = await build("kubespray", (raw) => (raw.workers = { ...raw.workers, count: 4 }));
        const added = after.graph.resources.map((r) => r.name).filter((n) => !before.graph.resources.some((r) => r.name === n));
        assert.ok(added.includes("kubespray-kubespray-worker-2-member") && added.includes("kubespray-kubespray-worker-3-member"), added.join());
        assert.deepEqual(added.filter((n) => n.startsWith("kubespray-kubespray")).sort(), ["kubespray-kubespray-worker-2-member", "kubespray-kubespray-worker-3-member"]);
        const hosts = YAML.parse(after.graph.named("kubespray-kubespray-cluster").inputs.hostsYaml);
        assert.equal(Object.keys(hosts.all.children.kube_node.hosts).length, 4);
    });

    it("scale-out: only the new workers' VMs and steps are added; every other resource keeps its inputs", async () => {
        const inputsByName = async (count: number) => {
            const { graph } = await build("complex", (raw) => (raw.workers = { ...raw.workers, count, maxCount: 6 }));
            return new Map(graph.resources.map((r) => [r.name, JSON.stringify(r.inputs)]));
        };
        const two = await inputsByName(2);
        const four = await inputsByName(4);
        const added = [...four.keys()].filter((n) => !two.has(n));
        assert.ok(added.every((n) => /complex(-kubeadm)?-worker-[23]/.test(n)), added.join(", "));
        assert.ok(added.includes("complex-kubeadm-worker-3-member"));
        for (const [name, inputs] of two) assert.equal(four.get(name), inputs, `${name} changed`);
    });

    it("heal: a node's generation replaces exactly its VM; the cluster generation replaces every node VM and the init", async () => {
        const triggers = async (heal: Record<string, unknown>) => {
            const { graph } = await build("complex", (raw) => (raw.heal = heal));
            return Object.fromEntries(graph.ofType(T.instance).map((r) => [r.name, r.opts.replacementTrigger])) as Record<string, string>;
        };
        const before = await triggers({});
        const one = await triggers({ nodes: { "worker-1": 1 } });
        assert.deepEqual(Object.keys(before).filter((n) => before[n] !== one[n]), ["complex-worker-1-vm"]);
        const all = await triggers({ generation: 1 });
        assert.deepEqual(Object.keys(before).filter((n) => before[n] !== all[n]).sort(), ["complex-master-0-vm", "complex-master-1-vm", "complex-master-2-vm", "complex-worker-0-vm", "complex-worker-1-vm"]);
        const { graph } = await build("complex", (raw) => (raw.heal = { generation: 1 }));
        assert.equal(graph.named("complex-kubeadm-init").inputs.clusterGeneration, 1);
    });

    it("operate: STOPPED shuts off every VM of the VNF; drained reaches only the memberships, its timeout only while drained", async () => {
        const inputsOf = async (operate?: Record<string, unknown>) => {
            const { graph } = await build("storage", (raw) => operate && (raw.operate = operate));
            return graph;
        };
        const started = await inputsOf();
        assert.deepEqual([...new Set(started.ofType(T.instance).map((r) => r.inputs.powerState))], ["active"]);
        const stopped = await inputsOf({ vnfState: "STOPPED" });
        assert.deepEqual([...new Set(stopped.ofType(T.instance).map((r) => r.inputs.powerState))], ["shutoff"]);
        assert.ok(stopped.ofType(T.instance).some((r) => r.name.includes("storage")), "the storage server too");

        const byName = (g: Graph) => new Map(g.resources.map((r) => [r.name, JSON.stringify(r.inputs)]));
        const drained = await inputsOf({ drained: true, drainTimeout: 30 });
        const changed = [...byName(drained)].filter(([name, inputs]) => byName(started).get(name) !== inputs).map(([name]) => name);
        assert.deepEqual(changed.sort(), [...started.ofType(T.master), ...started.ofType(T.worker)].map((r) => r.name).sort());
        for (const r of [...drained.ofType(T.master), ...drained.ofType(T.worker)]) assert.deepEqual([r.inputs.drained, r.inputs.stopDrainTimeoutSeconds], [true, 30], r.name);
        const otherTimeout = await inputsOf({ drainTimeout: 300 });
        assert.deepEqual([...byName(otherTimeout)].filter(([name, inputs]) => byName(started).get(name) !== inputs), [], "a timeout alone changes nothing");
    });

    it("change_ext_conn: while the workers' ports move, workers from index `moved` on keep the old network and addresses", async () => {
        const { graph } = await build("simple", (raw) => {
            raw.workers = { ...raw.workers, networkId: "net-new", portMove: { from: { networkId: "net-old", subnetId: "sub-old", fixedIps: ["10.9.0.10", "10.9.0.11"] }, moved: 1 } };
        });
        const port = (i: number) => graph.named(`simple-worker-${i}-port`).inputs;
        assert.deepEqual([port(0).networkId, port(0).fixedIps], ["net-new", undefined]);
        assert.deepEqual([port(1).networkId, port(1).fixedIps], ["net-old", [{ subnetId: "sub-old", ipAddress: "10.9.0.11" }]]);
        const trigger = (i: number) => graph.named(`simple-worker-${i}-port`).opts.replacementTrigger;
        assert.deepEqual([trigger(0), trigger(1)], ["allocated", "10.9.0.11"], "a new fixed IP replaces the port (Neutron would change it under the running VM)");
        assert.throws(
            () => parseVnfConfig({ ...configFromPulumiMap(withSecrets(readStackConfig("simple"), PASSWORDS.simple).config).raw, workers: { count: 2, portMove: { from: { networkId: "n", fixedIps: ["10.9.0.10"] }, moved: 3 } } }, { stackName: "simple", baseDir: PROJECT_DIR }),
            (e: Error) => /workers\.portMove\.from\.subnetId/.test(e.message) && /workers\.portMove\.from\.fixedIps: has 1 address/.test(e.message) && /workers\.portMove\.moved: is 3, above workers\.count 2/.test(e.message),
        );
    });

    it("change_flavour: while podaffinity → complex is under way, the server groups stay for the nodes not moved yet; moved nodes have no scheduler hint", async () => {
        const { graph } = await build("podaffinity", (raw) => {
            raw.flavour = "complex";
            raw.flavourChange = { from: "podaffinity", moved: ["worker-0", "master-1"] };
            delete raw.podAffinity;
        });
        assert.deepEqual(graph.ofType(T.serverGroup).map((g) => g.inputs.policies), [["anti-affinity"], ["anti-affinity"]]);
        const hinted = graph.ofType(T.instance).filter((r) => r.inputs.schedulerHints).map((r) => r.name).sort();
        assert.deepEqual(hinted, ["podaffinity-master-0-vm", "podaffinity-master-2-vm", "podaffinity-worker-1-vm"]);
        const done = await build("podaffinity", (raw) => {
            raw.flavour = "complex";
            delete raw.podAffinity;
        });
        assert.deepEqual([done.graph.ofType(T.serverGroup).length, done.graph.ofType(T.instance).filter((r) => r.inputs.schedulerHints).length], [0, 0]);
        const { raw } = configFromPulumiMap(withSecrets(readStackConfig("complex"), PASSWORDS.complex).config);
        assert.throws(
            () => parseVnfConfig({ ...raw, flavourChange: { from: "complex", fromServerGroupPolicy: "anti-affinity", moved: ["worker-9"] } }, { stackName: "complex", baseDir: PROJECT_DIR }),
            (e: Error) => /flavourChange\.from: a flavour change runs between complex and podaffinity/.test(e.message) && /flavourChange\.moved\[0\]: there is no worker-9/.test(e.message) && /flavourChange\.fromServerGroupPolicy/.test(e.message),
        );
    });

    it("operate: bad values are refused naming the field; a registry VNF has nothing to drain", () => {
        const refused = (stack: string, operate: unknown) => {
            const { config } = withSecrets(readStackConfig(stack), PASSWORDS[stack]);
            const { raw } = configFromPulumiMap(config);
            assert.throws(() => parseVnfConfig({ ...raw, operate }, { stackName: stack, baseDir: PROJECT_DIR }), (e: Error) => /operate\.(vnfState|drainTimeout|drained)/.test(e.message));
        };
        refused("simple", { vnfState: "PAUSED" });
        refused("simple", { drainTimeout: 0 });
        refused("registry", { drained: true });
    });
});
