import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { ConfigError } from "../config/spec";
import { convertInstantiateRequest, ConvertOptions } from "../config/tacker";
import { TACKER_FIELDS, tackerPathOf } from "../config/tackerMap";
import { makePackageDir, request, SEED_INSTANTIATE_BODIES } from "./support/fixtures";
import { PROJECT_DIR } from "./support/program";

const K = "additionalParams.k8s_cluster_installation_param";
const options: ConvertOptions = { baseDir: PROJECT_DIR, stackName: "test" };

function convert(body: unknown, extra: Partial<ConvertOptions> = {}) {
    return convertInstantiateRequest(body, { ...options, ...extra });
}

function refusal(body: unknown, extra: Partial<ConvertOptions> = {}): ConfigError {
    try {
        convert(body, extra);
    } catch (e) {
        if (e instanceof ConfigError) return e;
        throw e;
    }
    assert.fail("the request was accepted");
}

describe("Tacker InstantiateVnfRequest conversion", () => {
    describe("every instantiate body of the seeds converts verbatim", () => {
        for (const file of SEED_INSTANTIATE_BODIES) {
            it(file, () => {
                const result = convert(request(file));
                assert.ok(result.loaded.spec, "a validated model");
                assert.ok(result.ignored.some((i) => i.path.includes("lcm-operation-user-data") || i.path.includes("vimConnectionInfo") || i.path.includes("script_path")) || file.startsWith("registry-vnf"));
            });
        }
    });

    it("simple: one master, Tacker's worker range, the network of each CP, secrets found", () => {
        const { loaded, secrets, warnings, defaulted } = convert(request("simple-instantiate.json"));
        assert.equal(loaded.spec.kind, "cluster");
        if (loaded.spec.kind !== "cluster") return;
        assert.equal(loaded.spec.masters.count, 1);
        assert.equal(loaded.spec.ha, false);
        assert.deepEqual([loaded.spec.workers.count, loaded.spec.workers.minCount, loaded.spec.workers.maxCount], [2, 2, 4]);
        assert.equal(loaded.spec.masters.server.networkId, "71a3fbd1-f31e-4c2c-b0e2-26267d64a9ee");
        assert.equal(loaded.spec.workers.connectionPoint, "workerNode_CP2");
        assert.equal(loaded.spec.kubernetes.podCidr, "192.168.0.0/16");
        assert.equal(loaded.spec.kubernetes.serviceCidr, "10.199.187.0/24");
        assert.deepEqual(loaded.spec.proxy?.noProxy, ["192.168.246.0/24", "10.0.0.1"]);
        assert.equal(loaded.spec.tacker.vimId, "05ef7ca5-7e32-4a6b-a03d-52f811f04496");
        assert.deepEqual(secrets.map((s) => s.path).sort(), ["masters.password", "proxy.httpProxy", "proxy.httpsProxy", "workers.password"]);
        assert.ok(warnings.some((w) => w.path === `${K}.master_node.pod_cidr` && w.message.includes("192.168.0.0/16")), "host bits normalized with a warning");
        assert.ok(defaulted.some((d) => d.path === "image"));
    });

    it("complex and podaffinity: three masters behind the VIP port, server groups for podaffinity", () => {
        const complex = convert(request("complex-instantiate.json")).loaded.spec;
        const podaffinity = convert(request("podaffinity-instantiate.json")).loaded.spec;
        assert.ok(complex.kind === "cluster" && podaffinity.kind === "cluster");
        assert.equal(complex.masters.count, 3);
        assert.equal(complex.ha, true);
        assert.equal(complex.controlPlane.vipConnectionPoint, "vip_CP");
        assert.equal(complex.serverGroupPolicy, undefined);
        assert.equal(podaffinity.serverGroupPolicy, "anti-affinity");
    });

    it("storage: volumes, exports and PV manifests resolved against the package", () => {
        const pkg = makePackageDir();
        try {
            const spec = convert(request("storage-instantiate.json"), { packageDir: pkg.dir }).loaded.spec;
            assert.ok(spec.kind === "cluster");
            assert.deepEqual(spec.storageServer?.volumes.map((v) => [v.name, v.mountTo]), [["storage_server_volume", "/volume"]]);
            assert.equal(spec.storageServer?.exports.length, 3);
            assert.equal(spec.storageServer?.server.networkId, "f0c82461-36b5-4d86-8322-b0bc19cda65f");
            assert.deepEqual(spec.persistentVolumes.map((p) => p.manifestFile), [1, 2, 3].map((i) => fs.realpathSync(path.join(pkg.dir, `Files/kubernetes/nfs-pv${i}.yaml`))));
        } finally {
            pkg.cleanup();
        }
    });

    it("registry VNF and registry connections", () => {
        const pkg = makePackageDir();
        try {
            const registry = convert(request("registry-vnf-instantiate.json"), { packageDir: pkg.dir }).loaded.spec;
            assert.ok(registry.kind === "registry");
            assert.equal(registry.port, 5000);
            assert.equal(registry.connectionPoint, "CP1");
            assert.ok(registry.imageFile?.endsWith("Files/images/private_registry.tar"));

            const cluster = convert(request("registry-connection-instantiate.json"), { packageDir: pkg.dir }).loaded.spec;
            assert.ok(cluster.kind === "cluster");
            assert.deepEqual(cluster.privateRegistries.map((r) => [r.protocol, r.server]), [["http", "192.168.0.10:5000"], ["https", "registry.example.com"]]);
            assert.deepEqual(cluster.privateRegistries[1].hostsEntry, { ip: "192.168.0.20", hostname: "registry.example.com" });
            assert.equal(cluster.privateRegistries[1].username, "user01");
            assert.deepEqual(cluster.privateRegistries.map((r) => r.mirrorOf), [[], []]);

            const body = request("registry-connection-instantiate.json");
            body.additionalParams.k8s_cluster_installation_param.private_registry_connection_info[1].mirror_of = ["docker.io", "quay.io"];
            const mirroring = convert(body, { packageDir: pkg.dir }).loaded.spec;
            assert.ok(mirroring.kind === "cluster");
            assert.deepEqual(mirroring.privateRegistries[1].mirrorOf, ["docker.io", "quay.io"], "k8s-vnf's own mirror_of");
        } finally {
            pkg.cleanup();
        }
    });

    it("kubespray: Tacker's placeholders (0.0.0.0, empty paths) mean the stack creates the Ansible server", () => {
        const { loaded, warnings } = convert(request("kubespray-instantiate.json"));
        assert.ok(loaded.spec.kind === "cluster");
        assert.equal(loaded.spec.kubespray?.host, undefined);
        assert.equal(loaded.spec.kubespray?.kubesprayRoot, "/opt/kubespray");
        assert.equal(loaded.spec.kubespray?.inventoryPath, "/var/lib/k8s-vnf/inventory/test");
        assert.equal(loaded.spec.kubespray?.server?.networkId, "b0b84da3-3259-4855-b4cd-5711ba5e5de1");
        assert.equal(loaded.spec.externalLoadBalancer?.connectionPoint, "externalLB_CP1");
        assert.equal(loaded.spec.externalLoadBalancer?.server.networkId, "b0b84da3-3259-4855-b4cd-5711ba5e5de1");
        assert.ok(warnings.some((w) => w.path === `${K}.ansible.ip_address`));
    });

    it("kubespray: a package carrying Files/kubespray/kubespray-<version>.tar.gz installs that release from it; two releases there are refused", () => {
        const pkg = makePackageDir();
        try {
            const dir = path.join(pkg.dir, "Files/kubespray");
            fs.mkdirSync(dir, { recursive: true });
            fs.writeFileSync(path.join(dir, "kubespray-2.23.3.tar.gz"), Buffer.from([0x1f, 0x8b, 8, 0]));
            const spec = convert(request("kubespray-instantiate.json"), { packageDir: pkg.dir }).loaded.spec;
            assert.ok(spec.kind === "cluster");
            assert.equal(spec.kubespray?.version, "v2.23.3");
            assert.equal(spec.kubespray?.releaseFile, path.join(pkg.dir, "Files/kubespray/kubespray-2.23.3.tar.gz"));
            const unpackaged = convert(request("kubespray-instantiate.json")).loaded.spec;
            assert.equal(unpackaged.kind === "cluster" && unpackaged.kubespray?.version, "v2.31.0", "without a package: the default release");

            fs.writeFileSync(path.join(dir, "kubespray-2.24.0.tar.gz"), Buffer.from([0x1f, 0x8b, 8, 0]));
            const error = refusal(request("kubespray-instantiate.json"), { packageDir: pkg.dir });
            assert.match(error.message, new RegExp(`${K.replace(/\./g, "\\.")}\\.ansible: the VNF package holds several kubespray releases`));
        } finally {
            pkg.cleanup();
        }
    });

    it("a given package directory makes missing files problems, named by their request field", () => {
        const pkg = makePackageDir();
        try {
            fs.rmSync(path.join(pkg.dir, "Files/kubernetes/nfs-pv2.yaml"));
            const error = refusal(request("storage-instantiate.json"), { packageDir: pkg.dir });
            assert.deepEqual(error.problems.map((p) => p.path), [`${K}.pv_registration_params[1].pv_manifest_file_path`]);
            assert.match(error.message, /does not exist/);
        } finally {
            pkg.cleanup();
        }
    });

    it("seed 003's CNF request converts as it is once the VIM is known: its manifests, namespaceA as Kubernetes spells it, the instance label", () => {
        const vim = { endpoint: "https://10.10.0.35:6443", token: "vim-token-for-tests" };
        const packageDir = path.join(PROJECT_DIR, "examples/cnf-package");
        const result = convertInstantiateRequest(request("cnf-namespace-instantiate.json"), { baseDir: PROJECT_DIR, stackName: "vnf-x", packageDir, vim, instanceId: "inst-1", replicas: {} });
        assert.equal(result.config.vnfKind, "cnf");
        assert.deepEqual((result.config.cnf as any).manifests, ["Files/kubernetes/pod.yaml"]);
        assert.equal((result.config.cnf as any).namespace, "namespacea");
        assert.match(result.warnings.map((w) => `${w.path}: ${w.message}`).join("\n"), /additionalParams\.namespace: Kubernetes namespace names are lower case: namespaceA is namespace namespacea/);
        const spec = result.loaded.spec as any;
        assert.deepEqual(spec.objects.map((o: any) => [o.object.kind, o.object.metadata.namespace, o.object.metadata.labels.tacker_vnf_instance_id]), [["Pod", "namespacea", "inst-1"]]);
        assert.deepEqual(result.secrets.map((s) => s.path), ["cnf.vim.token"], "the VIM's token is the one secret");
        const bad = request("cnf-namespace-instantiate.json");
        bad.additionalParams.namespace = "name space";
        assert.throws(() => convertInstantiateRequest(bad, { baseDir: PROJECT_DIR, stackName: "vnf-x", packageDir, vim, instanceId: "i" }), /additionalParams\.namespace: "name space" is not a Kubernetes namespace name/);
        bad.additionalParams.namespace = "ns";
        bad.additionalParams["lcm-kubernetes-def-files"] = ["Files/kubernetes/none.yaml"];
        assert.throws(() => convertInstantiateRequest(bad, { baseDir: PROJECT_DIR, stackName: "vnf-x", packageDir, vim, instanceId: "i" }), /additionalParams\.lcm-kubernetes-def-files\[0\]: Files\/kubernetes\/none\.yaml does not exist/);
        assert.throws(() => convertInstantiateRequest(request("cnf-namespace-instantiate.json"), { baseDir: PROJECT_DIR, stackName: "vnf-x" }), /vimConnectionInfo: this is a CNF for a Kubernetes VIM: convert it through the LCM service/);
    });

    it("base config supplies what requests never carry (image, flavor) and the body wins elsewhere", () => {
        const base = { image: "my-image", flavor: "my-flavor", workers: { count: 3, maxCount: 6 } };
        const { config, defaulted } = convert(request("simple-instantiate.json"), { base });
        assert.equal(config.image, "my-image");
        assert.equal(config.flavor, "my-flavor");
        assert.deepEqual((config.workers as any).count, 3);
        assert.ok(!defaulted.some((d) => d.path === "image" || d.path === "workers.count"));
    });

    it("the mapping table translates config paths back to request paths, list indices included", () => {
        assert.equal(tackerPathOf("privateRegistries[1].hostsEntry.ip"), `${K}.private_registry_connection_info[1].hosts_string`);
        assert.equal(tackerPathOf("kubernetes.serviceCidr"), `${K}.master_node.cluster_cidr`);
        assert.equal(tackerPathOf("tenants[1].role"), "additionalParams.tenants[1].role", "a structure copied as it is: the field inside it");
        assert.equal(tackerPathOf("storageServer.exports[2].dir"), `${K}.storage_server.nfs_server_setup_params[2].export_dir`);
        assert.equal(tackerPathOf("masters.count"), undefined);
        assert.ok(TACKER_FIELDS.every((m) => m.config || m.note || m.ignored), "every row says what happens to its parameter");
    });

    describe("bad requests are refused, naming the request field", () => {
        const simple = () => request("simple-instantiate.json");
        const storage = () => request("storage-instantiate.json");
        const registryConn = () => request("registry-connection-instantiate.json");
        const registryVnf = () => request("registry-vnf-instantiate.json");
        const kubespray = () => request("kubespray-instantiate.json");
        const k8s = (b: any) => b.additionalParams.k8s_cluster_installation_param;

        const cases: [string, () => any, string][] = [
            ["pod_cidr that is not a CIDR", () => { const b = simple(); k8s(b).master_node.pod_cidr = "192.168.0.0"; return b; }, `${K}.master_node.pod_cidr`],
            ["service CIDR overlapping the pod CIDR", () => { const b = simple(); k8s(b).master_node.pod_cidr = "10.0.0.0/8"; return b; }, `${K}.master_node.cluster_cidr`],
            ["node CIDR overlapping the pod CIDR", () => { const b = simple(); k8s(b).proxy.k8s_node_cidr = "192.168.10.0/24"; return b; }, `${K}.proxy.k8s_node_cidr`],
            ["shell in a username", () => { const b = simple(); k8s(b).master_node.username = "ubuntu;reboot"; return b; }, `${K}.master_node.username`],
            ["an empty username", () => { const b = simple(); k8s(b).worker_node.username = ""; return b; }, `${K}.worker_node.username`],
            ["a missing password", () => { const b = simple(); delete k8s(b).master_node.password; return b; }, `${K}.master_node.password`],
            ["a missing worker_node", () => { const b = simple(); delete k8s(b).worker_node; return b; }, `${K}.worker_node`],
            ["a misspelt master_node field", () => { const b = simple(); k8s(b).master_node.pod_cdir = "10.0.0.0/16"; return b; }, `${K}.master_node.pod_cdir`],
            ["an unknown flavour", () => { const b = simple(); b.flavourId = "huge"; return b; }, "flavourId"],
            ["a VIP port name in flavour simple", () => { const b = simple(); k8s(b).master_node.cluster_cp_name = "vip_CP"; return b; }, `${K}.master_node.cluster_cp_name`],
            ["a master's own port as HA endpoint", () => { const b = request("complex-instantiate.json"); k8s(b).master_node.cluster_cp_name = "masterNode_CP1"; return b; }, `${K}.master_node.cluster_cp_name`],
            ["command substitution in no_proxy", () => { const b = simple(); k8s(b).proxy.no_proxy = "10.0.0.1,$(reboot)"; return b; }, `${K}.proxy.no_proxy`],
            ["shell in a proxy URL", () => { const b = simple(); k8s(b).proxy.http_proxy = "http://proxy:3128/;reboot"; return b; }, `${K}.proxy.http_proxy`],
            ["a connection point in no extVirtualLinks", () => { const b = simple(); b.extVirtualLinks.splice(0, 1); return b; }, `${K}.master_node.nic_cp_name`],
            ["a Kubernetes VIM", () => { const b = simple(); b.vimConnectionInfo[0].vimType = "kubernetes"; return b; }, "vimConnectionInfo[0].vimType"],
            ["both cluster and registry parameters", () => { const b = simple(); b.additionalParams.private_registry_installation_param = registryVnf().additionalParams.private_registry_installation_param; return b; }, "additionalParams"],
            ["a relative mount point", () => { const b = storage(); k8s(b).storage_server.cinder_volume_setup_params[0].mount_to = "volume"; return b; }, `${K}.storage_server.cinder_volume_setup_params[0].mount_to`],
            ["a volume mounted on /", () => { const b = storage(); k8s(b).storage_server.cinder_volume_setup_params[0].mount_to = "/"; return b; }, `${K}.storage_server.cinder_volume_setup_params[0].mount_to`],
            ["an export outside every volume", () => { const b = storage(); k8s(b).storage_server.nfs_server_setup_params[1].export_dir = "/etc"; return b; }, `${K}.storage_server.nfs_server_setup_params[1].export_dir`],
            ["an export to a non-network", () => { const b = storage(); k8s(b).storage_server.nfs_server_setup_params[0].export_to = "everyone"; return b; }, `${K}.storage_server.nfs_server_setup_params[0].export_to`],
            ["a manifest path leaving the package", () => { const b = storage(); k8s(b).pv_registration_params[2].pv_manifest_file_path = "../../etc/passwd"; return b; }, `${K}.pv_registration_params[2].pv_manifest_file_path`],
            ["a PV served by another CP", () => { const b = storage(); k8s(b).pv_registration_params[0].nfs_server_cp = "masterNode_CP1"; return b; }, `${K}.pv_registration_params[0].nfs_server_cp`],
            ["connection_type 2", () => { const b = registryConn(); k8s(b).private_registry_connection_info[0].connection_type = "2"; return b; }, `${K}.private_registry_connection_info[0].connection_type`],
            ["a registry port out of range", () => { const b = registryConn(); k8s(b).private_registry_connection_info[0].server = "192.168.0.10:99999"; return b; }, `${K}.private_registry_connection_info[0].server`],
            ["a one-word hosts_string", () => { const b = registryConn(); k8s(b).private_registry_connection_info[1].hosts_string = "registry.example.com"; return b; }, `${K}.private_registry_connection_info[1].hosts_string`],
            ["a hosts_string with a bad address", () => { const b = registryConn(); k8s(b).private_registry_connection_info[1].hosts_string = "999.0.0.20 registry.example.com"; return b; }, `${K}.private_registry_connection_info[1].hosts_string`],
            ["a CA certificate for an HTTP registry", () => { const b = registryConn(); k8s(b).private_registry_connection_info[0].certificate_path = "Files/registries/ca.crt"; return b; }, `${K}.private_registry_connection_info[0].certificate_path`],
            ["the same registry twice", () => { const b = registryConn(); k8s(b).private_registry_connection_info[1].server = "192.168.0.10:5000"; return b; }, `${K}.private_registry_connection_info[1].server`],
            ["a registry port_no out of range", () => { const b = registryVnf(); b.additionalParams.private_registry_installation_param.port_no = "70000"; return b; }, "additionalParams.private_registry_installation_param.port_no"],
            ["an absolute image_path", () => { const b = registryVnf(); b.additionalParams.private_registry_installation_param.image_path = "/tmp/registry.tar"; return b; }, "additionalParams.private_registry_installation_param.image_path"],
            ["shell in the kubespray root", () => { const b = kubespray(); k8s(b).ansible.kubespray_root_path = "/opt/$(id)"; return b; }, `${K}.ansible.kubespray_root_path`],
            ["an Ansible server address with a space", () => { const b = kubespray(); k8s(b).ansible.ip_address = "10.0.0.5 ; id"; return b; }, `${K}.ansible.ip_address`],
        ];
        for (const [what, body, field] of cases) {
            it(what, () => {
                const error = refusal(body());
                assert.ok(
                    error.problems.some((p) => p.path === field),
                    `expected a problem at ${field}, got:\n${error.message}`,
                );
                assert.ok(error.message.includes(field));
            });
        }

        it("reports every problem at once", () => {
            const b = simple();
            k8s(b).master_node.pod_cidr = "nope";
            k8s(b).worker_node.username = "bad user";
            b.flavourId = 7;
            const error = refusal(b);
            assert.ok(error.problems.length >= 3, error.message);
        });

        it("never puts a password or proxy credential in the message", () => {
            const b = simple();
            k8s(b).master_node.password = "s3cr3t-master-pw";
            k8s(b).proxy.http_proxy = "http://user1:pr0xy-pw@proxy:3128;reboot";
            k8s(b).master_node.pod_cidr = "nope";
            const error = refusal(b);
            assert.doesNotMatch(error.message, /s3cr3t-master-pw|pr0xy-pw/);
        });
    });
});
