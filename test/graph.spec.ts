import { strict as assert } from "node:assert";
import * as YAML from "yaml";
import * as path from "node:path";
import * as os from "node:os";
import * as fs from "node:fs";
import * as pulumi from "@pulumi/pulumi";
import { configFromPulumiMap, parseVnfConfig } from "../config/load";
import { buildVnf } from "../components/vnf";
import { ComputedOutputs, Graph, INIT_OUTPUTS, installMocks, PROJECT_DIR, readStackConfig, recordingTransformation, resolveOutputs, runProgram, settled, withSecrets } from "./support/program";

const T = {
    instance: "openstack:compute/instance:Instance",
    port: "openstack:networking/port:Port",
    fip: "openstack:networking/floatingIp:FloatingIp",
    sg: "openstack:networking/secGroup:SecGroup",
    rule: "openstack:networking/secGroupRule:SecGroupRule",
    serverGroup: "openstack:compute/serverGroup:ServerGroup",
    volume: "openstack:blockstorage/volume:Volume",
    attach: "openstack:compute/volumeAttach:VolumeAttach",
    node: "pulumi-nodejs:dynamic/k8s-vnf:KubernetesNode",
    lb: "pulumi-nodejs:dynamic/k8s-vnf:ApiLoadBalancer",
    init: "pulumi-nodejs:dynamic/k8s-vnf:KubeadmInit",
    podNetwork: "pulumi-nodejs:dynamic/k8s-vnf:PodNetwork",
    master: "pulumi-nodejs:dynamic/k8s-vnf:ControlPlaneMember",
    worker: "pulumi-nodejs:dynamic/k8s-vnf:WorkerMember",
    labels: "pulumi-nodejs:dynamic/k8s-vnf:NodeLabels",
    nfsServer: "pulumi-nodejs:dynamic/k8s-vnf:NfsServer",
    nfsClient: "pulumi-nodejs:dynamic/k8s-vnf:NfsClient",
    healCheck: "pulumi-nodejs:dynamic/k8s-vnf:StorageHealCheck",
    registryServer: "pulumi-nodejs:dynamic/k8s-vnf:RegistryServer",
    registryConnections: "pulumi-nodejs:dynamic/k8s-vnf:RegistryConnections",
    pv: "kubernetes:core/v1:PersistentVolume",
    k8sProvider: "pulumi:providers:kubernetes",
};

/** The `openstack:*` credentials a podaffinity stack needs for its compute-host labels. */
const OPENSTACK_CONFIG = {
    "openstack:authUrl": "https://keystone.example:5000/v3",
    "openstack:userName": "admin",
    "openstack:password": "os-pw-not-in-clear",
    "openstack:tenantName": "admin",
};
const OPENSTACK_API = { authUrl: "https://keystone.example:5000/v3", username: "admin", password: "os-pw-not-in-clear", projectName: "admin", userDomainName: "Default", projectDomainName: "Default" };

const PASSWORDS: Record<string, Record<string, Record<string, unknown>>> = {
    simple: { masters: { password: "m-pw" }, workers: { password: "w-pw" } },
    complex: { masters: { password: "m-pw" }, workers: { password: "w-pw" } },
    podaffinity: { masters: { password: "m-pw" }, workers: { password: "w-pw" } },
    storage: { masters: { password: "m-pw" }, workers: { password: "w-pw" }, storageServer: { password: "s-pw" } },
    registry: { registry: { password: "r-pw", tls: { privateKey: "-----BEGIN PRIVATE KEY-----\nregistry-key-not-in-clear\n-----END PRIVATE KEY-----\n" }, users: [{ password: "u01-pw" }] } },
    "registry-client": { masters: { password: "m-pw" }, workers: { password: "w-pw" }, privateRegistries: [{}, { password: "reg-pw" }] as any },
    kubespray: { masters: { password: "m-pw" }, workers: { password: "w-pw" }, kubespray: { password: "a-pw" }, externalLoadBalancer: { password: "lb-pw" } },
    cnf: { cnf: { vim: { token: "vim-token-not-in-clear" } } },
};

/** Builds an example stack's components with a recording transformation, as `pulumi up` would register them. */
async function build(stack: string, change?: (raw: Record<string, any>) => void, computed?: ComputedOutputs): Promise<{ graph: Graph; outputs: any; exported: Record<string, unknown> }> {
    const { config } = withSecrets(readStackConfig(stack), PASSWORDS[stack]);
    const { raw } = configFromPulumiMap(config);
    change?.(raw);
    const { spec } = parseVnfConfig(raw, { stackName: stack, baseDir: PROJECT_DIR });
    const graph = new Graph();
    await installMocks(graph, stack, computed);
    const exported = buildVnf(spec, { compute: OPENSTACK_API }, { transformations: [recordingTransformation(graph)] });
    const outputs = await resolveOutputs(exported);
    await settled(graph);
    return { graph, outputs, exported };
}

const isSecret = (v: any) => v && typeof v === "object" && v["4dabf18193072939515e22adb298388d"] === "1b47061264138c4ac30d75fd1eb44270";

function rulePorts(graph: Graph, groupResource: string): string[] {
    return graph
        .ofType(T.rule)
        .filter((r) => r.parent === groupResource)
        .map((r) => `${r.inputs.protocol}:${r.inputs.portRangeMin ?? ""}-${r.inputs.portRangeMax ?? ""}:${r.inputs.remoteIpPrefix ?? "group"}`);
}

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
const dependencyNames = (r: { opts: { dependsOn?: unknown } }) => ([] as unknown[]).concat(r.opts.dependsOn ?? []).map((d) => (d as { __name: string }).__name);

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

describe("resource graphs: lifecycle findings (issue 9)", () => {
    it("HA: the HAProxy port is open to the cluster's own nodes, so narrowing securityGroup.allowedCidrs does not cut them off the API", async () => {
        const { graph } = await build("complex", (raw) => (raw.securityGroup = { ...raw.securityGroup, allowedCidrs: ["192.0.2.0/24"] }));
        const rules = rulePorts(graph, "complex-nodes-sg");
        assert.ok(rules.includes("tcp:16443-16443:192.0.2.0/24"), rules.join(" "));
        assert.ok(rules.includes("tcp:16443-16443:group"), `the nodes reach VIP:16443: ${rules.join(" ")}`);
        assert.equal(graph.named("complex-nodes-sg-api-haproxy-members").inputs.remoteGroupId, "complex-nodes-sg-group-id");
        const simple = rulePorts((await build("simple")).graph, "simple-nodes-sg");
        assert.ok(!simple.some((r) => r.startsWith("tcp:16443")), "no HAProxy port without HA");
    });

    it("the init reaches the masters by the host keys their node steps saw last, so a healed master-0 (new keys) is still reached; its own login carries no key", async () => {
        const { graph } = await build("complex", undefined, { [T.node]: { hostKeyFingerprint: "SHA256:current-key" } });
        const init = graph.named("complex-kubeadm-init");
        assert.ok(isSecret(init.inputs.controlPlanes), "the masters' logins are secret");
        const controlPlanes = init.inputs.controlPlanes.value;
        assert.deepEqual(controlPlanes.map((c: any) => c.name), ["complex-master-0", "complex-master-1", "complex-master-2"], "the first master (where init runs) first");
        for (const c of controlPlanes) assert.equal(c.connection.hostKeyFingerprint, "SHA256:current-key", c.name);
        assert.equal(init.inputs.connection.value.hostKeyFingerprint, undefined, "a key in the init's identity would make a healed master-0 replace the cluster");
        assert.equal(init.inputs.vmId, undefined);
    });
});

describe("resource graphs: the cluster as a Kubernetes VIM, its tenants, a CNF in a namespace (seed 003)", () => {
    const K = {
        serviceAccount: "kubernetes:core/v1:ServiceAccount",
        secret: "kubernetes:core/v1:Secret",
        namespace: "kubernetes:core/v1:Namespace",
        clusterRoleBinding: "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
        role: "kubernetes:rbac.authorization.k8s.io/v1:Role",
        roleBinding: "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
        deployment: "kubernetes:apps/v1:Deployment",
        pod: "kubernetes:core/v1:Pod",
    };
    const tokenData = (token: string) => ({ data: { token: Buffer.from(token).toString("base64") } });

    it("a kubeadm cluster gets a ServiceAccount bound to cluster-admin with an explicit token Secret; endpoint and CA plain, the token secret", async () => {
        const { graph, outputs, exported } = await build("simple", (raw) => (raw.tenants = []), { [K.secret]: tokenData("vim-token-from-the-controller") });
        const [account] = graph.ofType(K.serviceAccount);
        assert.deepEqual(account.inputs.metadata, { name: "k8s-vnf-vim", namespace: "kube-system" });
        const [secret] = graph.ofType(K.secret);
        assert.equal(secret.inputs.type, "kubernetes.io/service-account-token", "Kubernetes >= 1.24 makes no token Secret by itself (KEP-2799)");
        assert.deepEqual(secret.inputs.metadata.annotations, { "kubernetes.io/service-account.name": "k8s-vnf-vim" });
        assert.deepEqual(dependencyNames(secret), ["simple-vim-account"], "the token Secret is made once its ServiceAccount exists");
        const [binding] = graph.ofType(K.clusterRoleBinding);
        assert.deepEqual(binding.inputs.roleRef, { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" });
        assert.deepEqual(binding.inputs.subjects, [{ kind: "ServiceAccount", name: "k8s-vnf-vim", namespace: "kube-system" }]);
        for (const r of [account, secret, binding]) {
            assert.equal((r.opts.deletedWith as { constructor: { name: string } }).constructor.name, "KubeadmInit", `${r.name} goes with the cluster`);
            assert.ok(r.opts.replacementTrigger, `${r.name}: a new cluster (entire heal) makes it again`);
            assert.equal(r.opts.deleteBeforeReplace, true, `${r.name}: delete-first (the provider stays across a new cluster: a copy made first would be deleted by name)`);
        }
        assert.deepEqual(outputs.vim, { endpoint: "https://10.10.0.100:6443", caCertificate: "CA" }, "the CA from the admin kubeconfig kubeadm wrote");
        assert.equal(outputs.vimToken, "vim-token-from-the-controller", "read from the Secret the token controller filled");
        assert.ok(await pulumi.isSecret(exported.vimToken as pulumi.Output<string>), "the token is a secret output");
        assert.ok(!(await pulumi.isSecret(exported.vim as pulumi.Output<string>)) && !(await pulumi.isSecret((exported.vim as any).caCertificate)), "endpoint and CA are not");
        assert.deepEqual(outputs.tenants, []);
    });

    it("tenants: an admin is bound cluster-wide; a user gets a Role and RoleBinding in each of its namespaces only; each its own token", async () => {
        const { graph, outputs, exported } = await build("simple", undefined, { [K.secret]: tokenData("a-token") });
        assert.deepEqual(graph.ofType(K.namespace).map((n) => n.inputs.metadata.name).sort(), ["cnf-a", "cnf-a-test"]);
        assert.deepEqual(graph.ofType(K.serviceAccount).map((a) => a.inputs.metadata.name).sort(), ["k8s-vnf-tenant-operator", "k8s-vnf-tenant-team-a", "k8s-vnf-vim"]);
        assert.equal(graph.ofType(K.secret).length, 3, "one token Secret per account");
        assert.deepEqual(graph.ofType(K.clusterRoleBinding).map((b) => b.inputs.subjects[0].name).sort(), ["k8s-vnf-tenant-operator", "k8s-vnf-vim"], "team-a is bound to nothing cluster-wide");
        const roles = graph.ofType(K.role);
        assert.deepEqual(roles.map((r) => r.inputs.metadata.namespace).sort(), ["cnf-a", "cnf-a-test"]);
        for (const role of roles) assert.deepEqual(role.inputs.rules, [{ apiGroups: ["*"], resources: ["*"], verbs: ["*"] }]);
        const bindings = graph.ofType(K.roleBinding);
        for (const b of bindings) {
            assert.deepEqual(b.inputs.roleRef, { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "k8s-vnf-tenant-team-a" });
            assert.deepEqual(b.inputs.subjects, [{ kind: "ServiceAccount", name: "k8s-vnf-tenant-team-a", namespace: "kube-system" }]);
            assert.ok(dependencyNames(b).includes(`simple-vim-namespace-${b.inputs.metadata.namespace}`), `${dependencyNames(b)}: bound once its namespace exists`);
        }
        assert.deepEqual(outputs.tenants, [{ name: "operator", role: "admin", namespaces: [] }, { name: "team-a", role: "user", namespaces: ["cnf-a", "cnf-a-test"] }]);
        assert.ok(await pulumi.isSecret(exported.tenantTokens as pulumi.Output<unknown>));
        assert.deepEqual(outputs.tenantTokens, { operator: "a-token", "team-a": "a-token" });
    });

    it("tenants: bad values are refused naming the field; a kubespray cluster has no API in the stack to make them with", async () => {
        await assert.rejects(build("simple", (raw) => (raw.tenants = [{ name: "Team_A", namespaces: ["ok"] }])), /tenants\[0\]\.name: must be a lowercase RFC 1123 label/);
        await assert.rejects(build("simple", (raw) => (raw.tenants = [{ name: "a", namespaces: [] }])), /tenants\[0\]\.namespaces: a user tenant acts in its namespaces only/);
        await assert.rejects(build("simple", (raw) => (raw.tenants = [{ name: "a", namespaces: ["x"] }, { name: "a", namespaces: ["y"] }])), /tenants\[1\]\.name: duplicates tenants\[0\]\.name/);
        await assert.rejects(build("simple", (raw) => (raw.tenants = [{ name: "a", namespaces: ["kube-system"] }])), /tenants\[0\]\.namespaces: kube-system is one of the namespaces every cluster has/);
        await assert.rejects(build("simple", (raw) => (raw.tenants = [{ name: "a", namespaces: ["default"] }])), /tenants\[0\]\.namespaces: default is one of the namespaces every cluster has/);
        await assert.rejects(build("kubespray", (raw) => (raw.tenants = [{ name: "a", role: "admin" }])), /tenants: are made through the kubeadm cluster's API/);
    });

    it("CNF: every object in the namespace, labelled with the instance; a provider from the VIM's endpoint, CA and token (secret); files in order", async () => {
        const { graph, outputs } = await build("cnf", (raw) => (raw.cnf.instanceId = "8a3adb69-0784-43c7-833e-aab0b6ab4470"));
        const [provider] = graph.ofType(T.k8sProvider);
        assert.ok(isSecret(provider.inputs.kubeconfig), "the kubeconfig carries the token");
        const kubeconfig = provider.inputs.kubeconfig.value as string;
        assert.match(kubeconfig, /server: https:\/\/10\.10\.0\.35:6443/);
        assert.match(kubeconfig, /token: vim-token-not-in-clear/);
        assert.match(kubeconfig, /certificate-authority-data: /);
        assert.equal(String(provider.inputs.deleteUnreachable), "true", "a CNF outliving its cluster still terminates");
        const objects = graph.resources.filter((r) => r.type.startsWith("kubernetes:") && r.type !== "kubernetes:yaml:ConfigGroup");
        assert.deepEqual(objects.map((o) => `${o.inputs.kind}/${o.inputs.metadata.name}`).sort(), ["Deployment/vdu1", "Pod/vdu2"]);
        for (const o of objects) {
            assert.equal(o.inputs.metadata.namespace, "cnf-a", o.name);
            assert.equal(o.inputs.metadata.labels.tacker_vnf_instance_id, "8a3adb69-0784-43c7-833e-aab0b6ab4470", o.name);
        }
        const [deployment] = graph.ofType(K.deployment);
        assert.equal(deployment.inputs.spec.replicas, 2, "replicas from cnf.replicas");
        assert.equal(deployment.inputs.spec.template.metadata.labels.tacker_vnf_instance_id, "8a3adb69-0784-43c7-833e-aab0b6ab4470", "its pods carry the label too");
        const [pod] = graph.ofType(K.pod);
        assert.deepEqual(dependencyNames(pod), ["cnf-file-0"], "the second file's objects are created after the first's, as Tacker does");
        assert.equal(graph.ofType(K.namespace).length, 0, "the namespace is not the CNF's own (createNamespace false)");
        assert.equal(pod.opts.replacementTrigger, "not restarted", "a trigger from the start: the engine takes a first value as no change");
        assert.deepEqual(outputs.vnfcResources.map((v: any) => [v.id, v.vduId, v.resourceId]), [
            ["cnf-vdu1-0", "vdu1", "Deployment/vdu1"],
            ["cnf-vdu1-1", "vdu1", "Deployment/vdu1"],
            ["cnf-vdu2-0", "vdu2", "Pod/vdu2"],
        ]);
        assert.equal(outputs.namespace, "cnf-a");
    });

    it("CNF: a heal marks a workload's pod template as kubectl rollout restart does, and re-creates a bare Pod; a created namespace comes first", async () => {
        const { graph } = await build("cnf", (raw) => {
            raw.cnf.createNamespace = true;
            raw.cnf.restarts = { vdu1: "2026-11-25T03:00:00Z", vdu2: "2026-11-25T03:00:00Z" };
        });
        const [deployment] = graph.ofType(K.deployment);
        assert.equal(deployment.inputs.spec.template.metadata.annotations["kubectl.kubernetes.io/restartedAt"], "2026-11-25T03:00:00Z");
        const [pod] = graph.ofType(K.pod);
        assert.equal(pod.opts.replacementTrigger, "2026-11-25T03:00:00Z");
        assert.equal(pod.opts.deleteBeforeReplace, true, "the new Pod has the old one's name");
        assert.equal(deployment.opts.replacementTrigger, undefined, "a Deployment rolls its pods in place");
        const [namespace] = graph.ofType(K.namespace);
        assert.equal(namespace.inputs.metadata.name, "cnf-a");
        assert.deepEqual(dependencyNames(deployment), ["cnf-namespace"]);
    });

    it("CNF: a healed ReplicaSet is re-created (its controller rolls no pods on a template change), a Deployment only marked", async () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-cnf-"));
        try {
            fs.cpSync(path.join(PROJECT_DIR, "examples/cnf-package"), dir, { recursive: true });
            const rs = fs.readFileSync(path.join(dir, "Files/kubernetes/deployment.yaml"), "utf8").replace("kind: Deployment", "kind: ReplicaSet").replace("name: vdu1", "name: vdu3").replace(/  strategy:\n    type: RollingUpdate\n/, "");
            fs.writeFileSync(path.join(dir, "Files/kubernetes/replicaset.yaml"), rs);
            const { graph } = await build("cnf", (raw) => {
                raw.packageDir = dir;
                raw.cnf.manifests = ["Files/kubernetes/deployment.yaml", "Files/kubernetes/replicaset.yaml"];
                raw.cnf.restarts = { vdu1: "mark-1", vdu3: "mark-1" };
            });
            const [replicaSet] = graph.ofType("kubernetes:apps/v1:ReplicaSet");
            assert.deepEqual([replicaSet.opts.replacementTrigger, replicaSet.opts.deleteBeforeReplace], ["mark-1", true]);
            assert.equal(replicaSet.inputs.spec.template.metadata.annotations?.["kubectl.kubernetes.io/restartedAt"], undefined);
            const [deployment] = graph.ofType(K.deployment);
            assert.equal(deployment.inputs.spec.template.metadata.annotations["kubectl.kubernetes.io/restartedAt"], "mark-1");
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    it("CNF: Tacker's namespace rules — the request's wins, else the manifests' own, several refused — and bad manifests are refused naming the field", async () => {
        const { graph } = await build("cnf", (raw) => delete raw.cnf.namespace);
        for (const o of graph.resources.filter((r) => r.type === K.deployment || r.type === K.pod)) assert.equal(o.inputs.metadata.namespace, "default");
        await assert.rejects(build("cnf", (raw) => (raw.cnf.namespace = "namespaceA")), /cnf\.namespace: must be a lowercase RFC 1123 label/);
        await assert.rejects(build("cnf", (raw) => (raw.cnf.replicas = { vdu2: 3 })), /cnf\.replicas\.vdu2: no Deployment, StatefulSet or ReplicaSet named vdu2/);
        await assert.rejects(build("cnf", (raw) => (raw.cnf.manifests = ["Files/kubernetes/missing.yaml"])), /cnf\.manifests\[0\]: Files\/kubernetes\/missing\.yaml does not exist/);
        await assert.rejects(build("cnf", (raw) => (raw.cnf.vim.endpoint = "http://10.10.0.35:6443")), /cnf\.vim\.endpoint: must be the API server's https:\/\/ URL/);
        await assert.rejects(build("cnf", (raw) => (raw.image = "ubuntu")), /image: not for vnfKind: cnf/);
    });
});

describe("resource graphs: each step's remote actions, what `pulumi preview --diff` shows (issue 15)", () => {
    const STEP_TYPE = /^pulumi-nodejs:dynamic\/k8s-vnf:/;
    const actionsOf = (r: { inputs: Record<string, any> }) => r.inputs.remoteActions as { when: string; action: string; digest: any; deletedWith?: string }[];
    const digestOf = (graph: Graph, name: string, phase: string) => {
        const found = actionsOf(graph.named(name)).filter((a) => a.when.split(", ").includes(phase));
        assert.equal(found.length, 1, `${name}: one ${phase} action`);
        return found[0].digest;
    };

    it("every step of every example stack carries its actions: phases, plain texts naming no credential, a short digest never secret (else the engine would hide the whole plan)", async () => {
        for (const stack of ["simple", "complex", "storage", "registry", "registry-client", "kubespray"]) {
            const { graph } = await build(stack);
            const steps = graph.resources.filter((r) => STEP_TYPE.test(r.type));
            assert.ok(steps.length > 0, stack);
            const passwords = JSON.stringify(PASSWORDS[stack]).match(/"[^"]*(-pw|not-in-clear)[^"]*"/g)!.map((p) => JSON.parse(p) as string);
            for (const step of steps) {
                const actions = actionsOf(step);
                assert.ok(Array.isArray(actions) && actions.length > 0, `${stack} ${step.name}: no remoteActions`);
                for (const a of actions) {
                    assert.ok(a.when.split(", ").every((p) => ["create", "update", "delete"].includes(p)), `${step.name}: ${a.when}`);
                    assert.equal(typeof a.action, "string");
                    for (const p of passwords) assert.ok(!a.action.includes(p), `${step.name}: a password in its action text`);
                    assert.ok(!isSecret(a.digest), `${step.name}: ${a.action}: a secret digest`);
                    assert.match(a.digest, /^sha256:[0-9a-f]{16}$/, `${step.name}: ${a.action}`);
                }
            }
        }
    });

    it("a worker's membership: its join at create, the operate drain at update, its drain and reset at delete, each naming the node", async () => {
        const { graph } = await build("simple");
        const actions = actionsOf(graph.named("simple-kubeadm-worker-1-member"));
        assert.deepEqual(
            actions.map((a) => [a.when, a.action.split(" ").slice(0, 3).join(" ")]),
            [
                ["create", "kubeadm join simple-worker-1"],
                ["update", "cordon and drain"],
                ["delete", "drain simple-worker-1 on"],
            ],
        );
    });

    it("a membership's delete actions name the init it is deleted with (a destroy runs none of them); its create actions do not", async () => {
        const { graph } = await build("simple");
        for (const a of actionsOf(graph.named("simple-kubeadm-worker-0-member"))) {
            if (a.when.includes("delete")) assert.match(String(a.deletedWith), /KubeadmInit::simple-kubeadm-init$/);
            else assert.equal(a.deletedWith, undefined);
        }
        for (const a of actionsOf(graph.named("simple-kubeadm-worker-0-node"))) assert.equal(a.deletedWith, undefined, "a node step is deleted on its own");
    });

    it("no digest depends on a credential: other passwords for the nodes, a registry or the proxy leave every plan as it was (their change shows as the secret inputs')", async () => {
        const plans = async (password: string) => {
            const { graph } = await build("registry-client", (raw) => {
                raw.proxy = { ...raw.proxy, httpProxy: `http://user:${password}@proxy.example:3128`, httpsProxy: `http://user:${password}@proxy.example:3128` };
                raw.masters = { ...raw.masters, password };
                raw.workers = { ...raw.workers, password };
                raw.privateRegistries = raw.privateRegistries.map((r: Record<string, unknown>) => (r.username ? { ...r, password } : r));
            });
            return graph.resources.filter((r) => STEP_TYPE.test(r.type)).map((r) => [r.name, r.inputs.remoteActions, isSecret(r.inputs.proxy), isSecret(r.inputs.credentials)]);
        };
        const first = await plans("first-pw-1");
        const second = await plans("second-pw-2");
        assert.deepEqual(second, first);
        assert.ok(!JSON.stringify(first).includes("first-pw-1"));
        assert.ok(first.some(([name, , proxySecret]) => /worker-0-node$/.test(String(name)) && proxySecret), "the proxy input itself stays secret");
        assert.ok(first.some(([name, , , credentialsSecret]) => /worker-0-registries$/.test(String(name)) && credentialsSecret), "the registry logins stay secret");
    });

    it("the digests follow what is sent: two more masters re-render HAProxy on every master; a longer drain deadline changes only the workers' delete digests", async () => {
        const three = (await build("complex")).graph;
        const five = (await build("complex", (raw) => (raw.masters = { ...raw.masters, count: 5, fixedIps: [...raw.masters.fixedIps, "10.10.0.14", "10.10.0.15"] }))).graph;
        for (const i of [0, 1, 2]) {
            const name = `complex-kubeadm-master-${i}-api-lb`;
            assert.notEqual(digestOf(five, name, "update"), digestOf(three, name, "update"), `${name}: HAProxy re-rendered`);
            assert.equal(digestOf(five, name, "delete"), digestOf(three, name, "delete"), `${name}: its stop is the same`);
        }
        const slower = (await build("complex", (raw) => (raw.kubernetes = { ...raw.kubernetes, drainTimeout: 900 }))).graph;
        const member = "complex-kubeadm-worker-0-member";
        assert.notEqual(digestOf(slower, member, "delete"), digestOf(three, member, "delete"));
        assert.equal(digestOf(slower, member, "create"), digestOf(three, member, "create"));
        assert.deepEqual(actionsOf(slower.named("complex-kubeadm-master-0-api-lb")), actionsOf(three.named("complex-kubeadm-master-0-api-lb")));
    });
});
