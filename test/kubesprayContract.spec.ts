import { strict as assert } from "node:assert";
import { UNKNOWN } from "../providers/step";
import { ProviderHost } from "./support/providerHost";

/**
 * The kubespray steps' check and diff through the real dynamic-provider host (neither opens a session): what
 * the engine decides with these answers, before anything runs.
 * - AnsibleServer: a new VM replaces it (the new server set up before the old goes); another release,
 *   archive, root or proxy updates it in place; a refresh that found another release installed is drift.
 * - KubesprayCluster: a new heal generation or another inventory directory is a new cluster, delete-first
 *   (two clusters cannot own the same nodes); workers joining or leaving, new variables or logins update it.
 *   A running cluster keeps its Kubernetes version: given, changed or left out where it was not, it is
 *   refused at check (cluster.yml is no upgrade), unless the cluster is replaced anyway.
 * - KubesprayWorker: a new VM is a new member, delete-first (remove-node.yml before the new VM joins); other
 *   changes update it. Its node name is never empty and remove-node.yml's variables never set `node`: either
 *   would make remove-node.yml take every node.
 * Values still unknown at preview are never refused, and no credential ever appears in a failure.
 */
const NODE_PW = "node-pw-not-shown";
const MASTER_PW = "master-pw-not-shown";
const KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nkey-not-shown\n-----END OPENSSH PRIVATE KEY-----\n";
const PROXY_URL = "http://proxyuser:proxy-pw-not-shown@proxy.example.com:3128";
const VARS_SECRET = "vars-token-not-shown";
const SECRETS = ["conn-pw-not-shown", NODE_PW, MASTER_PW, "key-not-shown", "proxy-pw-not-shown", VARS_SECRET];

const connection = { host: "192.0.2.20", username: "ubuntu", password: "conn-pw-not-shown" };
const SHA = "cd".repeat(32);

const SERVER = {
    vmId: "vm-ansible-1",
    kubesprayRoot: "/opt/kubespray",
    version: "v2.31.0",
    ansibleCore: { min: "2.18.0", maxExclusive: "2.19.0" },
    releaseArchive: { file: "/pkg/Files/kubespray/kubespray-2.31.0.tar.gz", sha256: SHA },
    proxy: { httpProxy: PROXY_URL, httpsProxy: PROXY_URL, noProxy: "10.10.0.0/24,.svc" },
};
const SERVER_STATE = { ansiblePlaybook: "/opt/kubespray/venv/bin/ansible-playbook", ansibleCoreVersion: "2.18.6", installedVersion: "v2.31.0", hostKeyFingerprint: "SHA256:ansible" };

/** Where the playbooks run (PlaybookPlace). */
const PLACE = {
    kubesprayRoot: "/opt/kubespray",
    ansiblePlaybook: "/opt/kubespray/venv/bin/ansible-playbook",
    inventoryPath: "/var/lib/k8s-vnf/inventory/vnf-1",
    cluster: "vnf-1",
    timeoutMinutes: 60,
};
const MASTERS = [
    { name: "vnf-1-master-0", address: "10.10.0.5", vmId: "vm-m0" },
    { name: "vnf-1-master-1", address: "10.10.0.6", vmId: "vm-m1" },
];
const WORKERS = [{ name: "vnf-1-worker-0", address: "10.10.0.7", vmId: "vm-w0" }];
const CLUSTER = {
    ...PLACE,
    masters: MASTERS,
    workers: WORKERS,
    generation: 0,
    hostsYaml: "all:\n  hosts:\n    vnf-1-master-0:\n      ansible_host: 10.10.0.5\n",
    clusterVarsYaml: "kube_pods_subnet: 10.244.0.0/16\n",
    proxyVarsYaml: `http_proxy: ${PROXY_URL}\nhttps_proxy: ${PROXY_URL}\n`,
    logins: { passwords: { "vnf-1-master-0": MASTER_PW, "vnf-1-master-1": MASTER_PW, "vnf-1-worker-0": NODE_PW } },
    firstMaster: { host: "10.10.0.5", username: "ubuntu", password: MASTER_PW },
    factsPlaybook: "playbooks/facts.yml",
    kubernetesVersion: "1.34.2",
    vars: { kube_network_plugin: "cilium", argocd_admin_password: "[secret]" },
    varsFile: { yaml: `kube_network_plugin: cilium\nargocd_admin_password: ${VARS_SECRET}\n`, secrets: [VARS_SECRET] },
};
const CLUSTER_STATE = { installedWorkers: WORKERS, adminKubeconfig: "apiVersion: v1\nkind: Config\n", nodeMtu: 1450, hostKeyFingerprint: "SHA256:ansible" };

const WORKER = {
    ...PLACE,
    vmId: "vm-w0",
    nodeName: "vnf-1-worker-0",
    address: "10.10.0.7",
    user: "ubuntu",
    login: { passwords: { "vnf-1-worker-0": NODE_PW } },
    nodeConnection: { host: "10.10.0.7", username: "ubuntu", password: NODE_PW },
    controlPlanes: MASTERS.map((m) => ({ name: m.name, connection: { host: m.address, username: "ubuntu", password: MASTER_PW } })),
    drainTimeoutSeconds: 300,
    removeNodeVars: ["skip_confirmation=true"],
};
const WORKER_STATE = { nodeStatus: "Ready", hostKeyFingerprint: "SHA256:ansible" };

type Props = Record<string, unknown>;

/** check and diff of one step, with its valid inputs and state as the base every case changes. */
function step(hostOf: () => ProviderHost, base: Props, state: Props) {
    const news = (over: Props = {}) => ({ connection, providerVersion: "1", ...base, ...over });
    const olds = (over: Props = {}) => ({ ...news(), ...state, ...over });
    const failures = async (over: Props) => (await hostOf().check({}, news(over))).failures;
    const properties = async (over: Props) => [...new Set((await failures(over)).map((f) => f.property))].sort();
    const diff = (over: Props, old: Props = {}) => hostOf().diff("id", olds(old), news(over));
    return { news, failures, properties, diff };
}

/** Every case changes the inputs in one way; each must give the engine the same answer. */
async function expectDiff(s: ReturnType<typeof step>, cases: Props[], expected: { changes: string; replaces: string[]; deleteBeforeReplace?: boolean }) {
    for (const over of cases) {
        const d = await s.diff(over);
        const got = expected.deleteBeforeReplace === undefined ? { changes: d.changes, replaces: d.replaces } : d;
        assert.deepEqual(got, expected, JSON.stringify(over));
    }
}

describe("kubespray steps: check and diff through the real dynamic-provider host", function () {
    this.timeout(60_000);
    let ansible: ProviderHost;
    let cluster: ProviderHost;
    let worker: ProviderHost;
    before(async () => {
        [ansible, cluster, worker] = await Promise.all([
            ProviderHost.start("providers/kubespray/ansibleServer.ts", "ansibleServerProvider"),
            ProviderHost.start("providers/kubespray/kubesprayCluster.ts", "kubesprayClusterProvider"),
            ProviderHost.start("providers/kubespray/kubesprayWorker.ts", "kubesprayWorkerProvider"),
        ]);
    });
    after(() => {
        ansible?.stop();
        cluster?.stop();
        worker?.stop();
    });
    const server = step(() => ansible, SERVER, SERVER_STATE);
    const kc = step(() => cluster, CLUSTER, CLUSTER_STATE);
    const kw = step(() => worker, WORKER, WORKER_STATE);

    describe("AnsibleServer", () => {
        it("accepts a release from the package or from GitHub, with or without a proxy, on a VM of its own or not", async () => {
            assert.deepEqual(await server.failures({}), []);
            const { releaseArchive: _archive, proxy: _proxy, vmId: _vm, ...bare } = SERVER;
            assert.deepEqual((await ansible.check({}, { connection, providerVersion: "1", ...bare })).failures, []);
            assert.deepEqual(await server.failures({ version: "v2.23.10", ansibleCore: { min: "2.14", maxExclusive: "2.15.0" } }), []);
            assert.deepEqual(await server.failures({ connection: { host: "fd00::20", username: "ubuntu", privateKey: KEY } }), []);
        });

        it("refuses bad inputs before anything runs, each failure naming its property", async () => {
            const bad = { kubesprayRoot: "opt/kubespray", version: "2.31.0", ansibleCore: { min: "2.18.0" }, releaseArchive: { file: "/pkg/kubespray.tar.gz" } };
            assert.deepEqual(await server.properties(bad), Object.keys(bad).sort());
            for (const version of ["v2.31", "v2.31.0-rc1", "master", "v2.31.0; reboot", "", 2.31]) assert.deepEqual(await server.properties({ version }), ["version"], JSON.stringify(version));
            for (const kubesprayRoot of ["/opt/../etc", "/opt/kube spray", "/opt/$(reboot)", ""]) assert.deepEqual(await server.properties({ kubesprayRoot }), ["kubesprayRoot"], kubesprayRoot);
            for (const ansibleCore of [{ min: "2.18.0", maxExclusive: "latest" }, "2.18", null]) assert.deepEqual(await server.properties({ ansibleCore }), ["ansibleCore"], JSON.stringify(ansibleCore));
            // An archive is only trusted with its digest; a missing one is no "download it instead".
            for (const releaseArchive of [{ file: "/pkg/k.tar.gz", sha256: "" }, { file: "/pkg/k.tar.gz", sha256: SHA.toUpperCase() }, { sha256: SHA }, "/pkg/k.tar.gz", null]) {
                assert.deepEqual(await server.properties({ releaseArchive }), ["releaseArchive"], JSON.stringify(releaseArchive));
            }
            assert.deepEqual(await server.properties({ connection: { host: "192.0.2.20", username: "ubuntu" } }), ["connection"]);
        });

        it("lets values still unknown at preview through, also inside objects, and still refuses the known bad ones", async () => {
            for (const key of ["vmId", "kubesprayRoot", "version", "ansibleCore", "releaseArchive", "proxy", "connection"]) assert.deepEqual(await server.failures({ [key]: UNKNOWN }), [], key);
            assert.deepEqual(await server.failures({ releaseArchive: { file: "/pkg/k.tar.gz", sha256: UNKNOWN }, ansibleCore: { min: UNKNOWN, maxExclusive: "2.19.0" } }), []);
            assert.deepEqual(await server.properties({ releaseArchive: UNKNOWN, version: "latest" }), ["version"]);
        });

        it("a new or unknown VM id, or another host, replaces it, not delete-first (the release stays on the old VM)", async () => {
            assert.equal((await server.diff({})).changes, "none");
            await expectDiff(server, [{ vmId: "vm-ansible-2" }, { vmId: UNKNOWN }], { changes: "some", replaces: ["vmId"], deleteBeforeReplace: false });
            await expectDiff(server, [{ connection: { ...connection, host: "192.0.2.21" } }], { changes: "some", replaces: ["connection"], deleteBeforeReplace: false });
        });

        it("another release, archive, root, ansible-core range or proxy (also still unknown) updates it in place", async () => {
            const cases = [
                { version: "v2.30.0", ansibleCore: { min: "2.17.3", maxExclusive: "2.18.0" } },
                { version: UNKNOWN },
                { releaseArchive: { file: "/pkg/Files/kubespray/kubespray-2.31.0.tar.gz", sha256: "ef".repeat(32) } },
                { releaseArchive: undefined },
                { kubesprayRoot: "/srv/kubespray" },
                { proxy: { httpProxy: "http://proxy.example.com:3128" } },
                { proxy: undefined },
                { connection: { ...connection, password: "another-pw" } },
            ];
            await expectDiff(server, cases, { changes: "some", replaces: [] });
        });

        it("a refresh that found another release installed is drift an update repairs; computed values alone are no change", async () => {
            assert.deepEqual(await server.diff({}, { installedVersion: "v2.30.0" }).then((d) => [d.changes, d.replaces]), ["some", []]);
            assert.deepEqual(await server.diff({}, { installedVersion: "" }).then((d) => [d.changes, d.replaces]), ["some", []]);
            assert.equal((await server.diff({}, { ansibleCoreVersion: "2.18.7", ansiblePlaybook: "/usr/local/bin/ansible-playbook", hostKeyFingerprint: "SHA256:other" })).changes, "none");
        });
    });

    describe("KubesprayCluster", () => {
        it("accepts a cluster by key or by passwords, one master, IPv6 addresses", async () => {
            assert.deepEqual(await kc.failures({}), []);
            assert.deepEqual(await kc.failures({ logins: { privateKey: KEY }, proxyVarsYaml: undefined }), []);
            assert.deepEqual(await kc.failures({ masters: [MASTERS[0]], workers: [{ ...WORKERS[0], address: "fd00::7" }] }), []);
            // No version (the release's default) and no operator variables, as a stack made before them.
            assert.deepEqual(await kc.failures({ kubernetesVersion: undefined, vars: undefined, varsFile: undefined }), []);
        });

        it("refuses a version that is none, and a vars file that is not {yaml, secrets}", async () => {
            for (const kubernetesVersion of ["v1.34.2", "1.34", "latest", "1.34.2; reboot", 1.34]) assert.deepEqual(await kc.properties({ kubernetesVersion }), ["kubernetesVersion"], JSON.stringify(kubernetesVersion));
            for (const varsFile of [{ yaml: 7, secrets: [] }, { yaml: "a: 1\n" }, { yaml: "a: 1\n", secrets: VARS_SECRET }, { yaml: "a: 1\n", secrets: [7] }, "a: 1\n", null]) {
                assert.deepEqual(await kc.properties({ varsFile }), ["varsFile"], JSON.stringify(varsFile));
            }
        });

        it("a running cluster keeps its Kubernetes version: a change, or one given or left out where it was not, is refused at check", async () => {
            const olds = { ...kc.news(), ...CLUSTER_STATE };
            const refusal = async (from: string | undefined, to: string | undefined, over: Props = {}) =>
                (await cluster.check({ ...olds, kubernetesVersion: from }, kc.news({ kubernetesVersion: to, ...over }))).failures.filter((f) => f.property === "kubernetesVersion").map((f) => f.reason);
            assert.match((await refusal("1.34.2", "1.34.3"))[0], /^kubernetes\.version changed from 1\.34\.2 to 1\.34\.3: a running cluster is not upgraded by k8s-vnf/);
            assert.match((await refusal(undefined, "1.34.3"))[0], /changed from the kubespray release's default \(kubernetes\.version not set\) to 1\.34\.3/);
            assert.match((await refusal("1.34.2", undefined))[0], /changed from 1\.34\.2 to the kubespray release's default/);
            assert.deepEqual(await refusal("1.34.2", "1.34.2"), []);
            assert.deepEqual(await refusal(undefined, undefined), [], "a cluster made before versions were passed, still without one");
            // A new cluster (an entire heal, another inventory) takes any version; so does a cluster not made yet.
            assert.deepEqual(await refusal("1.34.2", "1.35.0", { generation: 1 }), []);
            assert.deepEqual(await refusal(undefined, "1.35.0", { inventoryPath: "/var/lib/k8s-vnf/inventory/vnf-1b" }), []);
            assert.deepEqual((await cluster.check({}, kc.news({ kubernetesVersion: "1.35.0" }))).failures, []);
        });

        it("refuses bad inputs before anything runs, each failure naming its property", async () => {
            const bad = {
                kubesprayRoot: "/opt/../kubespray",
                ansiblePlaybook: "ansible-playbook",
                inventoryPath: "inventory/vnf-1",
                cluster: "vnf 1",
                masters: [],
                workers: [],
                factsPlaybook: "playbooks/facts",
                timeoutMinutes: 0,
                logins: {},
            };
            assert.deepEqual(await kc.properties(bad), Object.keys(bad).sort());
            // kubespray needs a kube_node: a cluster without workers is refused however they are missing.
            for (const workers of [[], undefined, "vnf-1-worker-0", [{ name: "vnf-1-worker-0", address: "10.10.0.7" }]]) assert.deepEqual(await kc.properties({ workers }), ["workers"], JSON.stringify(workers));
            for (const inventoryPath of ["inventory/vnf-1", "./vnf-1", "/var/lib/k8s-vnf/../../etc", "/var/lib/k8s vnf", "/tmp/x;reboot", ""]) {
                assert.deepEqual(await kc.properties({ inventoryPath }), ["inventoryPath"], inventoryPath);
            }
            const badNodes = [[{ ...MASTERS[0], name: "Master_0" }], [{ ...MASTERS[0], address: "10.10.0.5; reboot" }], [{ ...MASTERS[0], vmId: 7 }], undefined];
            for (const masters of badNodes) assert.deepEqual(await kc.properties({ masters }), ["masters"], JSON.stringify(masters));
            for (const timeoutMinutes of [1.5, -1, "60", undefined]) assert.deepEqual(await kc.properties({ timeoutMinutes }), ["timeoutMinutes"], JSON.stringify(timeoutMinutes));
            for (const logins of [undefined, null, { passwords: undefined, privateKey: "" }]) assert.deepEqual(await kc.properties({ logins }), ["logins"], JSON.stringify(logins));
            // By passwords, every node needs its own: the inventory's login files are written before any playbook runs.
            const mastersOnly = { passwords: { "vnf-1-master-0": MASTER_PW, "vnf-1-master-1": MASTER_PW } };
            for (const logins of [mastersOnly, { passwords: NODE_PW }, { passwords: { ...mastersOnly.passwords, "vnf-1-worker-0": 7 } }]) {
                assert.deepEqual(await kc.properties({ logins }), ["logins"], JSON.stringify(Object.keys(logins)));
            }
        });

        it("lets values still unknown at preview through, also inside lists, and still refuses the known bad ones", async () => {
            const keys = ["kubesprayRoot", "ansiblePlaybook", "inventoryPath", "cluster", "timeoutMinutes", "masters", "workers", "generation", "hostsYaml", "clusterVarsYaml", "proxyVarsYaml", "kubernetesVersion", "vars", "varsFile", "logins", "firstMaster", "factsPlaybook", "connection"];
            for (const key of keys) assert.deepEqual(await kc.failures({ [key]: UNKNOWN }), [], key);
            const nested = {
                masters: [{ ...MASTERS[0], address: UNKNOWN }],
                workers: [WORKERS[0], { name: UNKNOWN, address: "10.10.0.8", vmId: UNKNOWN }],
                logins: { passwords: { "vnf-1-master-0": UNKNOWN } },
            };
            assert.deepEqual(await kc.failures(nested), []);
            assert.deepEqual(await kc.properties({ workers: [{ name: UNKNOWN, address: "10.10.0.8", vmId: "vm-w1" }], inventoryPath: "vnf-1", masters: [] }), ["inventoryPath", "masters"]);
        });

        it("a new heal generation or inventory directory (also still unknown) is a new cluster, delete-first; another host too", async () => {
            assert.equal((await kc.diff({})).changes, "none");
            await expectDiff(kc, [{ generation: 1 }, { generation: UNKNOWN }], { changes: "some", replaces: ["generation"], deleteBeforeReplace: true });
            await expectDiff(kc, [{ inventoryPath: "/var/lib/k8s-vnf/inventory/vnf-1b" }, { inventoryPath: UNKNOWN }], { changes: "some", replaces: ["inventoryPath"], deleteBeforeReplace: true });
            await expectDiff(kc, [{ generation: 2, inventoryPath: "/srv/inventory/vnf-1" }], { changes: "some", replaces: ["generation", "inventoryPath"], deleteBeforeReplace: true });
            await expectDiff(kc, [{ connection: { ...connection, host: "192.0.2.21" } }, { connection: UNKNOWN }], { changes: "some", replaces: ["connection"], deleteBeforeReplace: true });
        });

        it("workers added, removed or on a new VM, new variables, proxy, logins or release update it in place", async () => {
            const w1 = { name: "vnf-1-worker-1", address: "10.10.0.8", vmId: "vm-w1" };
            const cases = [
                { workers: [...WORKERS, w1], hostsYaml: `${CLUSTER.hostsYaml}    vnf-1-worker-1:\n` },
                { workers: [w1] },
                { workers: [{ ...WORKERS[0], vmId: "vm-w0-healed" }] },
                { workers: [WORKERS[0], { ...w1, vmId: UNKNOWN }] },
                { clusterVarsYaml: "kube_pods_subnet: 10.245.0.0/16\n" },
                { proxyVarsYaml: undefined },
                { vars: { kube_network_plugin: "calico" }, varsFile: { yaml: "kube_network_plugin: calico\n", secrets: [] } },
                { varsFile: { yaml: "argocd_admin_password: another\n", secrets: ["another"] } },
                { vars: undefined, varsFile: undefined },
                { logins: { privateKey: KEY } },
                { ansiblePlaybook: "/usr/local/bin/ansible-playbook", kubesprayRoot: "/srv/kubespray" },
                { timeoutMinutes: 90 },
                { firstMaster: { ...CLUSTER.firstMaster, password: "new-master-pw" } },
            ];
            await expectDiff(kc, cases, { changes: "some", replaces: [] });
            // What the last run installed is computed: it never counts as a change of the inputs.
            assert.equal((await kc.diff({}, { installedWorkers: [], nodeMtu: 1500, adminKubeconfig: "other" })).changes, "none");
        });
    });

    describe("KubesprayWorker", () => {
        it("accepts a worker by password or by key, with the confirmation variables of any driven release", async () => {
            assert.deepEqual(await kw.failures({}), []);
            assert.deepEqual(await kw.failures({ login: { privateKey: KEY }, nodeConnection: { host: "10.10.0.7", username: "ubuntu", privateKey: KEY } }), []);
            assert.deepEqual(await kw.failures({ removeNodeVars: [] }), []);
            assert.deepEqual(await kw.failures({ removeNodeVars: ["delete_nodes_confirmation=yes", "skip_confirmation=true"] }), []);
        });

        it("refuses a node name remove-node.yml would read as more than this node (empty: every node)", async () => {
            for (const nodeName of ["", undefined, " ", "vnf-1-worker-0,vnf-1-worker-1", "vnf-1-worker-*", "kube_node", "all", "etcd", "ungrouped", "!vnf-1-master-0", "vnf-1-worker-0:vnf-1-master-0", "~.*", "Vnf-1-Worker-0", 7]) {
                assert.deepEqual(await kw.properties({ nodeName }), ["nodeName"], JSON.stringify(nodeName));
            }
        });

        it("refuses remove-node.yml variables that set `node` or are no name=value pair", async () => {
            for (const removeNodeVars of [["node=vnf-1-worker-1"], ["skip_confirmation=true", "node="], ["node=all"], ["skip_confirmation"], ["skip_confirmation=true reset_nodes=false"], ["x=$(reboot)"], "skip_confirmation=true", undefined]) {
                assert.deepEqual(await kw.properties({ removeNodeVars }), ["removeNodeVars"], JSON.stringify(removeNodeVars));
            }
        });

        it("refuses other bad inputs before anything runs, each failure naming its property", async () => {
            const bad = { nodeName: "", controlPlanes: [{ name: "vnf-1-master-0" }], drainTimeoutSeconds: 0, removeNodeVars: ["node=vnf-1-worker-0"] };
            assert.deepEqual(await kw.properties(bad), Object.keys(bad).sort());
            // No master to drain on: the node would be removed without a drain, or not at all.
            for (const controlPlanes of [[], undefined, "vnf-1-master-0"]) assert.deepEqual(await kw.properties({ controlPlanes }), ["controlPlanes"], JSON.stringify(controlPlanes));
            for (const drainTimeoutSeconds of [-1, 2.5, "300", undefined]) assert.deepEqual(await kw.properties({ drainTimeoutSeconds }), ["drainTimeoutSeconds"], JSON.stringify(drainTimeoutSeconds));
            // Its delete drains first, then writes the login for remove-node.yml: a login that cannot log into
            // this node would fail only after the drain.
            for (const login of [{}, { passwords: {} }, { passwords: { "vnf-1-worker-1": NODE_PW } }, undefined]) assert.deepEqual(await kw.properties({ login }), ["login"], JSON.stringify(login));
        });

        it("lets values still unknown at preview through, also inside lists, and still refuses the known bad ones", async () => {
            const keys = ["vmId", "nodeName", "address", "user", "login", "nodeConnection", "controlPlanes", "drainTimeoutSeconds", "removeNodeVars", "inventoryPath", "cluster", "connection"];
            for (const key of keys) assert.deepEqual(await kw.failures({ [key]: UNKNOWN }), [], key);
            assert.deepEqual(await kw.failures({ controlPlanes: [{ name: "vnf-1-master-0", connection: UNKNOWN }], removeNodeVars: [UNKNOWN], login: { passwords: { "vnf-1-worker-0": UNKNOWN } } }), []);
            assert.deepEqual(await kw.properties({ nodeName: UNKNOWN, removeNodeVars: ["node=vnf-1-worker-0"] }), ["removeNodeVars"]);
        });

        it("a new or unknown VM id replaces it delete-first (remove-node.yml before the new VM joins); another Ansible server too", async () => {
            assert.equal((await kw.diff({})).changes, "none");
            await expectDiff(kw, [{ vmId: "vm-w0-healed" }, { vmId: UNKNOWN }], { changes: "some", replaces: ["vmId"], deleteBeforeReplace: true });
            await expectDiff(kw, [{ connection: { ...connection, host: "192.0.2.21" } }], { changes: "some", replaces: ["connection"], deleteBeforeReplace: true });
        });

        it("other masters, drain deadline, variables, logins or address update it in place (its delete then uses them)", async () => {
            const cases = [
                { controlPlanes: [WORKER.controlPlanes[1]] },
                { controlPlanes: UNKNOWN },
                { drainTimeoutSeconds: 600 },
                { removeNodeVars: [] },
                { login: { privateKey: KEY } },
                { nodeConnection: { ...WORKER.nodeConnection, password: "new-pw" } },
                { address: "10.10.0.17" },
                { timeoutMinutes: 30 },
            ];
            await expectDiff(kw, cases, { changes: "some", replaces: [] });
            assert.equal((await kw.diff({}, { nodeStatus: "NotReady" })).changes, "none", "the node's status is computed, no input");
        });
    });

    // Last: the providers' output then holds everything every check above printed.
    describe("credentials", () => {
        it("no credential ever appears in a failure or in the providers' output, also when put in the wrong input", async () => {
            const reasons: string[] = [];
            const collect = async (s: ReturnType<typeof step>, over: Props) => {
                const failures = await s.failures(over);
                assert.notDeepEqual(failures, [], JSON.stringify(Object.keys(over)));
                reasons.push(...failures.map((f) => `${f.property} ${f.reason}`));
            };
            await collect(server, { version: PROXY_URL, kubesprayRoot: PROXY_URL, releaseArchive: { file: NODE_PW, sha256: NODE_PW }, ansibleCore: { min: KEY, maxExclusive: NODE_PW } });
            await collect(server, { connection: { host: PROXY_URL, username: NODE_PW, password: MASTER_PW } });
            await collect(kc, {
                cluster: MASTER_PW,
                inventoryPath: PROXY_URL,
                kubesprayRoot: KEY,
                factsPlaybook: NODE_PW,
                masters: [{ name: MASTER_PW, address: NODE_PW, vmId: "vm-m0" }],
                workers: [{ name: NODE_PW, address: PROXY_URL, vmId: "vm-w0" }],
                timeoutMinutes: NODE_PW,
                logins: { passwords: MASTER_PW, privateKey: "" },
            });
            await collect(kc, { logins: { privateKey: "" }, masters: [] });
            await collect(kc, { kubernetesVersion: VARS_SECRET, varsFile: { yaml: VARS_SECRET, secrets: VARS_SECRET }, cluster: VARS_SECRET });
            await collect(kw, {
                nodeName: NODE_PW,
                removeNodeVars: [`node=${NODE_PW}`, `http_proxy=${PROXY_URL}`],
                controlPlanes: [{ name: MASTER_PW }],
                drainTimeoutSeconds: MASTER_PW,
                login: { passwords: { "vnf-1-worker-1": NODE_PW } },
            });
            await collect(kw, { login: { passwords: { "vnf-1-worker-1": NODE_PW, "vnf-1-master-0": MASTER_PW } } });
            const seen = [reasons.join("\n"), ansible.output, cluster.output, worker.output].join("\n");
            for (const secret of SECRETS) assert.deepEqual(seen.split("\n").filter((line) => line.includes(secret)), [], `${secret} shown`);
        });
    });
});
