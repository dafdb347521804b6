/** Resource graphs of the example stacks under mocks: what each stack registers, its ports, secrets and outputs. */
import { strict as assert } from "node:assert";
import { Graph, readStackConfig, resolveOutputs, runProgram, withSecrets } from "./support/program";
import { build, dependencyNames, isSecret, OPENSTACK_CONFIG, PASSWORDS, rulePorts, T } from "./support/graphBuild";

describe("resource graphs of the example stacks", () => {
    it("every example stack runs through index.ts and exports its VNFC resources", async () => {
        for (const stack of Object.keys(PASSWORDS)) {
            const { config, secretKeys } = withSecrets(readStackConfig(stack), PASSWORDS[stack]);
            const graph = new Graph();
            const outputs = (await runProgram(stack, { ...config, ...OPENSTACK_CONFIG }, [...secretKeys, "openstack:password"], graph)) as any;
            if (stack === "cnf") {
                assert.ok(outputs.vnfcResources.length >= 1 && graph.count(T.instance) === 0, "a CNF has no VMs, its VNFCs are its workloads' pods");
                continue;
            }
            assert.ok(graph.count(T.instance) >= 1, stack);
            assert.equal(outputs.vnfcResources.length, graph.count(T.instance) - (stack === "kubespray" ? 1 : 0), `${stack}: one VNFC per VM (the Ansible server is not part of the VNF)`);
            for (const vnfc of outputs.vnfcResources) assert.ok(vnfc.id && vnfc.serverId && vnfc.portId && vnfc.address, JSON.stringify(vnfc));
        }
    });

    it("simple: one master, two workers, named by index, user-guide rules, password login through cloud-init", async () => {
        const { graph, outputs } = await build("simple");
        assert.equal(graph.count(T.instance), 3);
        assert.equal(graph.count(T.port), 3);
        assert.equal(graph.count(T.serverGroup), 0);
        assert.deepEqual(graph.ofType(T.instance).map((r) => r.inputs.name).sort(), ["simple-master-0", "simple-worker-0", "simple-worker-1"]);
        for (const vm of graph.ofType(T.instance)) {
            assert.equal(vm.inputs.imageName, "ubuntu-22.04-server-cloudimg-amd64");
            assert.equal(vm.inputs.flavorName, "m1.medium");
            assert.equal(vm.opts.deleteBeforeReplace, true, "a VM is replaced delete-first: its port is kept and binds to one server");
            assert.ok(isSecret(vm.inputs.userData), "user data carries the password: secret");
            assert.match(vm.inputs.userData.value, /ssh_pwauth: true/);
        }
        for (const port of graph.ofType(T.port)) assert.equal(port.inputs.networkId, "71a3fbd1-f31e-4c2c-b0e2-26267d64a9ee");
        const rules = rulePorts(graph, "simple-nodes-sg");
        for (const expected of ["tcp:22-22:0.0.0.0/0", "tcp:6443-6443:0.0.0.0/0", "tcp:30000-32767:0.0.0.0/0", "icmp:-:0.0.0.0/0", "tcp:2379-2380:group", "tcp:10250-10255:group"]) {
            assert.ok(rules.includes(expected), `${expected} in ${rules.join(" ")}`);
        }
        assert.ok(!rules.some((r) => r.startsWith("tcp:16443")), "no HAProxy port without HA");
        assert.equal(outputs.controlPlaneEndpoint, `${outputs.masterAddresses[0]}:6443`);
        assert.equal(outputs.vip, undefined);
        assert.deepEqual(outputs.vnfcResources.map((v: any) => [v.id, v.vduId, v.cpdId]), [
            ["simple-master-0", "masterNode", "masterNode_CP1"],
            ["simple-worker-0", "workerNode", "workerNode_CP2"],
            ["simple-worker-1", "workerNode", "workerNode_CP2"],
        ]);
        assert.deepEqual(outputs.scale.worker_instance, { count: 2, min: 2, max: 4 });
    });

    it("parents: every resource hangs under its component, children named after their parent", async () => {
        const { graph } = await build("simple");
        assert.equal(graph.named("simple-worker-1-vm").parent, "simple-worker-1");
        assert.equal(graph.named("simple-worker-1-port").parent, "simple-worker-1");
        assert.equal(graph.named("simple-worker-1").parent, "simple-worker");
        assert.equal(graph.named("simple-worker").parent, "simple");
        assert.equal(graph.named("simple-nodes-sg-group").parent, "simple-nodes-sg");
        // The steps' provider is the program's own, one per run (providers/stepResource.ts), under the stack.
        assert.equal(graph.named("k8s-vnf-steps").type, "pulumi:providers:pulumi-nodejs");
        for (const r of graph.resources.filter((x) => x.name !== "simple" && x.name !== "k8s-vnf-steps")) {
            assert.ok(r.parent && r.name.startsWith(`${r.parent}-`), `${r.name} is named after its parent ${r.parent}`);
        }
    });

    it("security group rules go with their group (deletedWith): a destroy deletes the group, not each rule", async () => {
        const { graph } = await build("storage");
        const rules = graph.ofType(T.rule);
        assert.ok(rules.length > 10);
        for (const r of rules) {
            const group = r.opts.deletedWith as unknown as { __name: string } | undefined;
            assert.equal(group?.__name, `${r.parent}-group`, r.name);
            assert.equal(r.inputs.securityGroupId, `${r.parent}-group-id`, `${r.name}: in the group it goes with`);
        }
    });

    it("complex: three masters share the VIP port's address; HAProxy and VRRP rules", async () => {
        const { graph, outputs } = await build("complex");
        assert.equal(graph.ofType(T.instance).filter((r) => r.inputs.metadata["k8s-vnf-role"] === "master").length, 3);
        const vip = graph.named("complex-vip");
        assert.deepEqual(vip.inputs.fixedIps, [{ subnetId: "0fe68555-8d3a-4fcb-83e2-602744eab106", ipAddress: "10.10.0.10" }]);
        const masterPorts = [0, 1, 2].map((i) => graph.named(`complex-master-${i}-port`));
        assert.deepEqual(masterPorts.map((p) => p.inputs.fixedIps[0].ipAddress), ["10.10.0.11", "10.10.0.12", "10.10.0.13"]);
        for (const p of masterPorts) assert.deepEqual(p.inputs.allowedAddressPairs, [{ ipAddress: "10.10.0.10" }]);
        for (const i of [0, 1]) assert.equal(graph.named(`complex-worker-${i}-port`).inputs.allowedAddressPairs, undefined);
        assert.equal(masterPorts[0].inputs.securityGroupIds.length, 2, "masters are also in the control-plane group");
        assert.deepEqual(rulePorts(graph, "complex-control-plane-sg"), ["112:-:group"]);
        assert.equal(graph.named("complex-control-plane-sg-vrrp").inputs.remoteGroupId, "complex-control-plane-sg-group-id");
        assert.ok(rulePorts(graph, "complex-nodes-sg").includes("tcp:16443-16443:10.10.0.0/16"));
        assert.equal(outputs.controlPlaneEndpoint, "10.10.0.10:16443");
        assert.equal(outputs.vip, "10.10.0.10");
    });

    it("podaffinity: masters and workers in anti-affinity server groups, used as scheduler hints", async () => {
        const { graph } = await build("podaffinity");
        const groups = graph.ofType(T.serverGroup);
        assert.deepEqual(groups.map((g) => [g.inputs.name, g.inputs.policies]).sort(), [["podaffinity-master", ["anti-affinity"]], ["podaffinity-worker", ["anti-affinity"]]]);
        for (const vm of graph.ofType(T.instance)) {
            const role = vm.inputs.metadata["k8s-vnf-role"];
            assert.deepEqual(vm.inputs.schedulerHints, [{ group: `podaffinity-${role}-server-group-id` }]);
        }
        assert.ok(graph.ofType(T.instance).filter((v) => v.inputs.metadata["k8s-vnf-role"] === "worker").every((v) => v.inputs.availabilityZone === "nova"));
    });

    it("storage: the Cinder volume is its own resource, attached delete-first to the storage server", async () => {
        const { graph, outputs } = await build("storage");
        const volume = graph.named("storage-storage-volume-storage_server_volume");
        assert.equal(volume.inputs.size, 5);
        assert.deepEqual(volume.opts.ignoreChanges, ["availabilityZone", "volumeType"], "a new zone or type would replace the volume, and the data with it");
        const attach = graph.named("storage-storage-attach-storage_server_volume");
        assert.equal(attach.inputs.instanceId, "storage-storage-server-vm-id");
        assert.equal(attach.inputs.volumeId, "storage-storage-volume-storage_server_volume-id");
        assert.equal(attach.opts.deleteBeforeReplace, true);
        assert.equal(graph.named("storage-storage-server-vm").inputs.flavorName, "m1.small");
        assert.deepEqual(rulePorts(graph, "storage-nfs-sg").sort(), ["tcp:111-111:group", "tcp:2049-2049:group", "udp:111-111:group", "udp:2049-2049:group"]);
        assert.equal(graph.named("storage-nfs-sg-nfs-tcp").inputs.remoteGroupId, "storage-nodes-sg-group-id", "NFS is open to the cluster nodes only");
        assert.ok(outputs.storageServerAddress);
    });

    it("storage: the server's VM boots on a port of its own; a storage heal (heal.nodes.storage) replaces that VM only", async () => {
        const { graph } = await build("storage");
        const vm = graph.named("storage-storage-server-vm");
        assert.deepEqual(vm.inputs.networks, [{ port: "storage-storage-server-port-id" }], "the address is the port's, which outlives the VM");
        assert.equal(await resolveOutputs(vm.opts.replacementTrigger), "0");
        const healed = await build("storage", (raw) => (raw.heal = { nodes: { storage: 1 } }));
        assert.equal(await resolveOutputs(healed.graph.named("storage-storage-server-vm").opts.replacementTrigger), "1");
        for (const other of healed.graph.ofType(T.instance).filter((r) => r.name !== "storage-storage-server-vm")) {
            assert.equal(await resolveOutputs(other.opts.replacementTrigger), await resolveOutputs(graph.named(other.name).opts.replacementTrigger), other.name);
        }
    });

    it("storage: the NFS server step on the attached volumes: serials, exports with pinned fsids and root_squash, its login secret", async () => {
        const { graph } = await build("storage");
        const nfs = graph.named("storage-storage-nfs");
        assert.equal(nfs.type, T.nfsServer);
        assert.equal(nfs.inputs.vmId, "storage-storage-server-vm-id", "through the attachment");
        assert.deepEqual(nfs.inputs.volumes, [{ serial: "storage-storage-volu", mountTo: "/volume" }], "the Cinder id cut to 20 characters");
        const lines = String(nfs.inputs.exportsFile).split("\n").filter((l) => l.startsWith("/"));
        assert.deepEqual(
            lines.map((l) => l.replace(/fsid=\d+/, "fsid=N")),
            [1, 2, 3].map((i) => `/volume/nfs/pv${i} 10.10.0.0/24(rw,sync,no_subtree_check,root_squash,sec=sys,fsid=N)`),
        );
        assert.equal(new Set(lines.map((l) => /fsid=(\d+)/.exec(l)![1])).size, 3, "one fsid per export");
        assert.deepEqual(nfs.inputs.exportDirs, ["/volume/nfs/pv1", "/volume/nfs/pv2", "/volume/nfs/pv3"]);
        assert.ok(isSecret(nfs.inputs.connection), "its login is secret");
        assert.equal(nfs.opts.deleteBeforeReplace, true);
        const tacker = await build("storage", (raw) => (raw.storageServer.exports[0] = { ...raw.storageServer.exports[0], squash: "all", insecure: true }));
        assert.match(String(tacker.graph.named("storage-storage-nfs").inputs.exportsFile), /^\/volume\/nfs\/pv1 10\.10\.0\.0\/24\(rw,sync,no_subtree_check,all_squash,insecure,sec=sys,fsid=\d+\)$/m);
    });

    it("storage: the VM depends on the heal gate (StorageHealCheck: the PVs, the masters and a digest of what replaces the VM, secret), so its check runs before any replacement", async () => {
        const { graph } = await build("storage", (raw) => (raw.heal = { nodes: { storage: 3 } }));
        const gate = graph.named("storage-storage-heal-check");
        assert.equal(gate.type, T.healCheck);
        assert.deepEqual([gate.inputs.healGeneration, gate.inputs.persistentVolumes, gate.inputs.healWhileInUse], [3, ["nfs-pv1", "nfs-pv2", "nfs-pv3"], false]);
        assert.ok(isSecret(gate.inputs.controlPlanes) && isSecret(gate.inputs.connection) && isSecret(gate.inputs.serverIdentity));
        const vm = graph.named("storage-storage-server-vm");
        assert.deepEqual(dependencyNames(vm), ["storage-storage-heal-check"]);
        assert.equal(await resolveOutputs(vm.opts.replacementTrigger), "3");
        const identity = (g: typeof graph) => g.named("storage-storage-heal-check").inputs.serverIdentity.value;
        const reimaged = await build("storage", (raw) => (raw.storageServer.image = "another-image"));
        assert.notEqual(identity(reimaged.graph), identity(graph), "a new image (a new VM) is checked too");
        const resized = await build("storage", (raw) => (raw.storageServer.flavor = "m1.large"));
        assert.equal(identity(resized.graph), identity(graph), "a resize keeps the VM");
        const whileInUse = await build("storage", (raw) => (raw.storageServer.healWhileInUse = true));
        assert.equal(whileInUse.graph.named("storage-storage-heal-check").inputs.healWhileInUse, true);
        const noPvs = await build("storage", (raw) => (raw.persistentVolumes = []));
        assert.equal(noPvs.graph.count(T.healCheck), 0, "no PVs, nothing to wait for");
    });

    it("storage: every master and worker gets the NFS client, on its VM (the order is the lab's to show)", async () => {
        const { graph } = await build("storage");
        const clients = graph.ofType(T.nfsClient);
        assert.deepEqual(clients.map((r) => r.name).sort(), ["storage-kubeadm-master-0-nfs-client", "storage-kubeadm-worker-0-nfs-client", "storage-kubeadm-worker-1-nfs-client"]);
        for (const c of clients) {
            const vm = c.name.replace("storage-kubeadm-", "storage-").replace("-nfs-client", "-vm-id");
            assert.equal(c.inputs.vmId, vm);
            assert.equal(c.inputs.nodeName, vm.replace(/-vm-id$/, ""));
            assert.ok(isSecret(c.inputs.connection));
        }
        assert.equal((await build("simple")).graph.count(T.nfsClient), 0, "no storage server, no client");
    });

    it("storage: the package's PVs through @pulumi/kubernetes, the storage server's address in place of the manifest's, on the cluster's kubeconfig (secret)", async () => {
        const { graph, outputs } = await build("storage");
        const pvs = graph.ofType(T.pv);
        assert.deepEqual(pvs.map((p) => p.name).sort(), ["storage-pv-nfs-pv1", "storage-pv-nfs-pv2", "storage-pv-nfs-pv3"]);
        for (const pv of pvs) {
            const n = pv.name.slice(-1);
            assert.equal(pv.inputs.metadata.name, `nfs-pv${n}`);
            assert.deepEqual(pv.inputs.spec.nfs, { server: outputs.storageServerAddress, path: `/volume/nfs/pv${n}` }, "0.0.0.0 replaced");
            assert.equal(pv.inputs.spec.persistentVolumeReclaimPolicy, "Retain");
            assert.equal((pv.opts.provider as unknown as { __name: string }).__name, "storage-kubeadm-api", "the cluster's provider");
            assert.equal((pv.opts.deletedWith as unknown as { __name: string }).__name, "storage-kubeadm-init", "deleted with the cluster");
            assert.equal(await resolveOutputs(pv.opts.replacementTrigger), `sha256:${"a".repeat(64)}`, "registered again in a new cluster (its CA hash)");
            assert.equal(pv.opts.deleteBeforeReplace, true, "delete-first: the provider stays across a new cluster");
        }
        const provider = graph.named("storage-kubeadm-api");
        assert.equal(provider.type, T.k8sProvider);
        assert.ok(isSecret(provider.inputs.kubeconfig), "the kubeconfig is secret");
        assert.equal(provider.inputs.deleteUnreachable, "true", "objects of a cluster gone (entire-cluster heal) are deleted from the state");
        assert.equal(provider.inputs.clusterIdentifier, "k8s-vnf:storage-kubeadm", "one identity across cluster generations: a new cluster updates the provider, never replaces it");
        assert.match(provider.inputs.kubeconfig.value, /server: https:\/\/10\.10\.0\.\d+:6443/);
        assert.match(provider.inputs.kubeconfig.value, /client-key-data/, "credentials and CA kept");
    });

    it("the API server certificate names the VIP and the masters' floating IPs (kubeadm apiServer.certSANs)", async () => {
        const complex = await build("complex");
        assert.deepEqual(complex.graph.named("complex-kubeadm-init").inputs.certSans, ["10.10.0.10"], "the VIP");
        const floating = await build("simple", (raw) => (raw.masters = { ...raw.masters, floatingIpPool: "public" }));
        const fip = floating.graph.named("simple-master-0-fip");
        assert.ok(fip);
        const sans = floating.graph.named("simple-kubeadm-init").inputs.certSans;
        assert.equal(sans.length, 1);
        assert.match(sans[0], /^172\.24\.4\.\d+$/, "the floating IP");
        assert.deepEqual((await build("simple")).graph.named("simple-kubeadm-init").inputs.certSans, [], "nothing else to add");
    });

    it("registry: one VM with its fixed IP and the registry port open", async () => {
        const { graph, outputs } = await build("registry");
        assert.equal(graph.count(T.instance), 1);
        assert.deepEqual(graph.named("registry-server-port").inputs.fixedIps, [{ subnetId: "d1bebebe-dde4-486a-8bca-eb9939aec972", ipAddress: "192.168.0.10" }]);
        assert.ok(rulePorts(graph, "registry-sg").includes("tcp:5000-5000:192.168.0.0/24"));
        assert.equal(outputs.registryEndpoint, "192.168.0.10:5000");
        assert.equal(outputs.vnfKind, "registry");
    });

    it("registry: the images on a Cinder volume of their own, attached delete-first; the RegistryServer step on it with HTTPS, its key and logins secret", async () => {
        const { graph } = await build("registry");
        const volume = graph.named("registry-volume");
        assert.deepEqual([volume.inputs.name, volume.inputs.size], ["registry-registry-images", 50]);
        assert.deepEqual(volume.opts.ignoreChanges, ["availabilityZone", "volumeType"], "a new zone or type would replace the volume, and the images with it");
        const attach = graph.named("registry-attach");
        assert.deepEqual([attach.inputs.instanceId, attach.inputs.volumeId, attach.opts.deleteBeforeReplace], ["registry-server-vm-id", "registry-volume-id", true]);
        const step = graph.named("registry-registry");
        assert.equal(step.type, T.registryServer);
        assert.equal(step.inputs.vmId, "registry-server-vm-id", "through the attachment");
        assert.deepEqual(step.inputs.volumes, [{ serial: "registry-volume-id", mountTo: "/var/lib/docker-registry" }]);
        assert.deepEqual([step.inputs.port, step.inputs.scheme], [5000, "https"]);
        assert.match(String(step.inputs.certificate), /^-----BEGIN CERTIFICATE-----/);
        assert.match(String(step.inputs.config), /^  tls:\n    certificate: \/etc\/docker\/registry\/tls\.crt\n    key: \/etc\/docker\/registry\/tls\.key$/m);
        assert.match(String(step.inputs.config), /^auth:\n  htpasswd:\n    realm: k8s-vnf-registry\n    path: \/etc\/docker\/registry\/htpasswd$/m);
        for (const key of ["privateKey", "logins", "connection"]) assert.ok(isSecret(step.inputs[key]), `${key} is secret`);
        assert.equal(step.inputs.logins.value, "user01:u01-pw");
        assert.equal(step.opts.deleteBeforeReplace, true, "one VM at a time has the volume");
        assert.equal(step.inputs.registryImage, undefined, "no image: the distribution's package");
    });

    it("registry: a heal (heal.nodes.registry or heal.generation) replaces the VM only, on its own port (same address), the volume kept", async () => {
        const { graph } = await build("registry");
        assert.deepEqual(graph.named("registry-server-vm").inputs.networks, [{ port: "registry-server-port-id" }]);
        assert.equal(await resolveOutputs(graph.named("registry-server-vm").opts.replacementTrigger), "0");
        for (const heal of [{ nodes: { registry: 1 } }, { generation: 1 }]) {
            const healed = await build("registry", (raw) => (raw.heal = heal));
            assert.equal(await resolveOutputs(healed.graph.named("registry-server-vm").opts.replacementTrigger), "1", JSON.stringify(heal));
            assert.equal(await resolveOutputs(healed.graph.named("registry-volume").opts.replacementTrigger), undefined);
        }
    });

    it("registry-client: each node gets its registry connections on its VM (before its membership: the lab's to show); the logins as the kubelet's credentials, secret", async () => {
        const { graph } = await build("registry-client");
        assert.equal(graph.count(T.instance), 3, "no OpenStack resources of their own");
        const steps = graph.ofType(T.registryConnections);
        assert.deepEqual(steps.map((r) => r.name).sort(), ["registry-client-kubeadm-master-0-registries", "registry-client-kubeadm-worker-0-registries", "registry-client-kubeadm-worker-1-registries"]);
        for (const step of steps) {
            const vm = step.name.replace("registry-client-kubeadm-", "registry-client-").replace("-registries", "-vm-id");
            assert.equal(step.inputs.vmId, vm, "after the node's preparation, on its VM");
            assert.ok(isSecret(step.inputs.credentials) && isSecret(step.inputs.connection));
            assert.deepEqual(JSON.parse(step.inputs.credentials.value), { auths: { "registry.example.com": { auth: Buffer.from("user01:reg-pw").toString("base64") } } });
            assert.deepEqual(step.inputs.hostsLines, ["192.168.0.20 registry.example.com"]);
            const [http, https] = step.inputs.registries;
            assert.deepEqual([http.server, http.caCertificate], ["192.168.0.10:5000", ""]);
            assert.match(http.hostsToml, /^server = "http:\/\/192\.168\.0\.10:5000"$/m);
            assert.match(https.hostsToml, /^  ca = "\/etc\/containerd\/certs\.d\/registry\.example\.com\/ca\.crt"$/m);
            assert.match(https.caCertificate, /^-----BEGIN CERTIFICATE-----/);
        }
        assert.deepEqual(dependencyNames(graph.named("registry-client-kubeadm-init")), ["registry-client-kubeadm-master-0-registries"], "kubeadm init pulls its images through them");
        assert.equal((await build("simple")).graph.count(T.registryConnections), 0, "no registries, no step");
    });

    it("kubespray: an Ansible server VM and an external LB with an outside and an inside port", async () => {
        const { graph, outputs } = await build("kubespray");
        assert.equal(graph.named("kubespray-ansible-vm").inputs.flavorName, "m1.small");
        const lbPorts = [graph.named("kubespray-external-lb-port"), graph.named("kubespray-external-lb-port-1")];
        assert.deepEqual(graph.named("kubespray-external-lb-vm").inputs.networks, lbPorts.map((p) => ({ port: `${p.name}-id` })));
        assert.deepEqual(lbPorts[1].inputs.securityGroupIds, ["kubespray-nodes-sg-group-id"]);
        assert.equal(graph.named("kubespray-external-lb-fip").inputs.pool, "public");
        assert.ok(rulePorts(graph, "kubespray-lb-sg").includes("tcp:8383-8383:0.0.0.0/0"));
        assert.match(outputs.externalLoadBalancerAddress, /^172\.24\.4\./, "the LB is reached on its floating IP");
    });

    it("kubespray with three masters: no VIP port, VRRP group, HAProxy rule or allowed address (keepalived and HAProxy on the masters are kubeadm's; kubespray's API is behind the external LB), and the control-plane endpoint is the LB's as the nodes reach it", async () => {
        const { graph, outputs } = await build("kubespray", (raw) => Object.assign(raw, { flavour: "complex", masters: { ...raw.masters, count: 3 } }));
        assert.equal(graph.resources.filter((r) => /-vip$|control-plane-sg/.test(r.name)).length, 0, graph.resources.map((r) => r.name).join(" "));
        for (const port of graph.ofType(T.port).filter((p) => p.name.includes("-master-"))) assert.equal(port.inputs.allowedAddressPairs, undefined, port.name);
        assert.match(outputs.controlPlaneEndpoint, /^[\d.]+:8383$/);
    });

    it("scale: a new worker count only adds or removes the tail", async () => {
        const names = async (count: number) =>
            (await build("simple", (raw) => (raw.workers = { ...raw.workers, count, maxCount: 6 }))).graph.resources.map((r) => r.name).filter((n) => n.includes("-worker-"));
        const two = await names(2);
        const four = await names(4);
        assert.ok(two.every((n) => four.includes(n)), "the first two workers are untouched");
        assert.deepEqual(four.filter((n) => !two.includes(n)).filter((n) => n.endsWith("-vm")).sort(), ["simple-worker-2-vm", "simple-worker-3-vm"]);
    });
});

/** Names of the resources in a resource's dependsOn (Pulumi keeps each resource's name in `__name`). */
