/**
 * The private registry (seed 002) and a cluster connected to it on lab hosts, driven as a user drives them: stack
 * config and the real Pulumi CLI, engine and plugins against the lab OpenStack API. Two registry VNFs run Debian's
 * registry for real on Cinder volumes that are lab volumes (real ext4 on loop devices): one over HTTPS with an
 * htpasswd login, one over plain HTTP; an image the test makes is preloaded into each with skopeo. The cluster's
 * nodes run the real containerd (kubeadm and the kubelet are the lab's stand-ins); its pulls go through
 * containerd's CRI plugin, with the kubelet's credentials (test/support/kubeletPull.ts), through the hosts.toml
 * files the step wrote. A registry VNF's heal is realPulumi.lab.spec.ts's; pulls by the real kubelet from a
 * registry VNF with a login are realKubelet.lab.spec.ts's.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { registryConfig } from "../components/registryPlan";
import { Lab } from "./lab/lab";
import { makeCertificates } from "./support/certificates";
import { kubeletPull } from "./support/kubeletPull";
import { failure, useLab } from "./support/labSuite";
import { ociArchive } from "./support/ociImage";
import { LabOpenStackApi } from "./support/openstackApi/server";
import { realClusterStack, suiteApi, suiteStack } from "./support/realCluster";
import { RealStack } from "./support/realStack";
import { builtTools, useBuiltTools } from "./support/tools";

const LOGIN_PASSWORD = "registry-login-pw-1";
const IMAGE = "team/app:1.0";

function registryStack(api: LabOpenStackApi, lab: Lab, name: string, ip: string, packageDir: string, extra: Record<string, unknown>): Record<string, unknown> {
    return {
        vnfKind: "registry",
        vnfName: name,
        image: api.image.name,
        flavor: api.flavor.name,
        packageDir,
        registry: {
            networkId: api.network.id,
            subnetId: api.network.subnetId,
            fixedIps: [ip],
            password: lab.password,
            preloadImages: [{ file: "Files/images/app.tar", image: IMAGE }],
            ...extra,
        },
    };
}

describe("private registry on lab hosts (seed 002): the real Pulumi CLI and plugins against the lab OpenStack API", function () {
    useBuiltTools();
    this.timeout(900_000);
    let tls: ReturnType<typeof makeCertificates>;
    let other: ReturnType<typeof makeCertificates>;
    // Each login also as its `auth` (base64 of user:password), as the kubelet's and containerd's copies carry it.
    const logins = [LOGIN_PASSWORD, "registry-login-pw-2"].flatMap((p) => [p, Buffer.from(`user01:${p}`).toString("base64")]);
    const suite = useLab([], { secrets: () => [...logins, tls?.privateKey, other?.privateKey].filter(Boolean) as string[] });
    // Made in `before`, so that a suite skipped or filtered out leaves no folder.
    let dir = "";
    let httpsRegistry: RealStack;
    let httpRegistry: RealStack;
    let cluster: RealStack;
    let httpsIp: string;
    let httpIp: string;
    let image: ReturnType<typeof ociArchive>;
    const inside = (host: string, command: string) => suite.lab.inside(host, command);
    const WORKER = "rc-worker-0";

    before(async function () {
        if (!suite.lab) this.skip();
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-registry-"));
        httpsIp = `${suite.lab.subnet}.60`;
        httpIp = `${suite.lab.subnet}.61`;
        tls = makeCertificates(dir, httpsIp, "registry");
        other = makeCertificates(dir, httpsIp, "other");
        fs.mkdirSync(path.join(dir, "package/Files/images"), { recursive: true });
        fs.mkdirSync(path.join(dir, "package/Files/registries"), { recursive: true });
        fs.writeFileSync(path.join(dir, "package/Files/registries/ca.crt"), tls.ca);
        fs.writeFileSync(path.join(dir, "package/Files/registries/other-ca.crt"), other.ca);
        image = ociArchive(path.join(dir, "package/Files/images/app.tar"), { files: { "app/hello.txt": "hello from the package\n" }, cmd: ["/app/hello.txt"] });
        const packageDir = path.join(dir, "package");
        // The cluster's first master runs the real control plane, whose CA and API server the real Kubernetes
        // plugin reaches for the cluster's VIM account (the kubeadm and kubelet stand-ins do the rest).
        const tools = builtTools();
        suite.lab.giveTools({ kube: tools.bins.kube, etcd: tools.bins.etcd });
        const api = await suiteApi(suite, "rc");
        const tlsLogin = { tls: { certificate: tls.certificate, privateKey: tls.privateKey }, users: [{ username: "user01", password: LOGIN_PASSWORD }] };
        httpsRegistry = await suiteStack(suite, "rgs", registryStack(api, suite.lab, "rgs", httpsIp, packageDir, tlsLogin), { env: api.env() });
        httpRegistry = await suiteStack(suite, "rgh", registryStack(api, suite.lab, "rgh", httpIp, packageDir, {}), { env: api.env() });
        const connected = () => ({
            packageDir,
            masters: { count: 1, password: suite.lab.password },
            workers: { count: 1, maxCount: 3, password: suite.lab.password },
            kubernetes: { cniManifest: "https://projectcalico.example/calico.yaml" },
            privateRegistries: [
                { protocol: "https", server: `${httpsIp}:5000`, username: "user01", password: LOGIN_PASSWORD, caCertificateFile: "Files/registries/ca.crt", hostsEntry: { ip: httpsIp, hostname: "registry.lab" } },
                { protocol: "http", server: `${httpIp}:5000` },
            ],
        });
        cluster = (await realClusterStack(suite, "rc", connected, api)).stack;
    });
    after(() => dir && fs.rmSync(dir, { recursive: true, force: true }));

    it("instantiate the registries: Debian's registry on its own volume (formatted once), its config, TLS key and bcrypt logins; the package's image pushed with skopeo", async () => {
        await Promise.all([httpsRegistry.up(), httpRegistry.up()]);
        const host = "rgs-registry";
        assert.equal((await inside(host, "findmnt -rn -o TARGET --target /var/lib/docker-registry")).trim(), "/var/lib/docker-registry");
        assert.equal(await inside(host, "cat /etc/docker/registry/config.yml"), registryConfig({ port: 5000, tls: true, logins: true }));
        assert.equal(await inside(host, "stat -c '%a %U:%G' /etc/docker/registry/tls.key /etc/docker/registry/htpasswd"), "640 root:docker-registry\n640 root:docker-registry\n");
        assert.match(await inside(host, "cat /etc/docker/registry/htpasswd"), /^user01:\$2y\$/, "bcrypt");
        assert.equal((await inside(host, "ps -o user= -C docker-registry")).trim(), "docker-registry");
        assert.equal(await inside(host, "curl -s -o /dev/null -w '%{http_code}' --cacert /dev/stdin https://" + httpsIp + ":5000/v2/ <<'EOF'\n" + tls.ca + "EOF"), "401", "logins on, and the certificate valid for the address");
        assert.equal(await inside("rgh-registry", `curl -s -o /dev/null -w '%{http_code}' http://${httpIp}:5000/v2/`), "200");
        for (const [stack, h] of [[httpsRegistry, host], [httpRegistry, "rgh-registry"]] as const) {
            assert.equal(stack.output.filter((l) => /was blank: formatted ext4/.test(l)).length, 1);
            assert.equal((await inside(h, "cat /var/lib/docker-registry/docker/registry/v2/repositories/team/app/_manifests/tags/1.0/current/link")).trim(), image.manifestDigest, "skopeo pushed the archive's manifest as it is");
            assert.deepEqual(stack.outputsOf(`${h.split("-")[0]}-registry`).preloaded, [IMAGE]);
        }
    });

    it("a second run changes nothing and uploads nothing", async () => {
        const before = httpsRegistry.output.length;
        const result = await httpsRegistry.up();
        assert.deepEqual(Object.keys(result.changes), ["same"]);
        assert.equal(httpsRegistry.output.slice(before).filter((l) => /preloaded/.test(l)).length, 0);
    });

    it("instantiate a cluster: every node gets containerd's hosts.toml per registry, the CA, the /etc/hosts line and the kubelet's credentials before it joins", async () => {
        await cluster.up();
        for (const node of ["rc-master-0", WORKER]) {
            assert.match(await inside(node, "cat /etc/containerd/config.toml"), /config_path = "\/etc\/containerd\/certs\.d"/);
            assert.equal(await inside(node, `cat '/etc/containerd/certs.d/${httpsIp}:5000/ca.crt'`), tls.ca);
            assert.match(await inside(node, `cat '/etc/containerd/certs.d/${httpIp}:5000/hosts.toml'`), new RegExp(`^server = "http://${httpIp.replace(/\./g, "\\.")}:5000"$`, "m"));
            assert.match(await inside(node, "cat /etc/hosts"), new RegExp(`# BEGIN k8s-vnf registries\\n${httpsIp.replace(/\./g, "\\.")} registry\\.lab\\n# END k8s-vnf registries`));
            assert.equal(await inside(node, "stat -c %a /var/lib/kubelet/config.json"), "600\n");
            const prefix = `rc-kubeadm-${node.replace("rc-", "")}`;
            const connections = cluster.steps.find((s) => s.op === "create" && s.name === `${prefix}-registries`)!;
            const member = cluster.steps.find((s) => s.op === "create" && s.name === `${prefix}-member`)!;
            assert.ok(connections.ended! <= member.started, `${node}: connected before it joins`);
        }
    });

    it("a node pulls through containerd's CRI plugin: over HTTPS with the CA and the kubelet's login, and over plain HTTP", async () => {
        assert.equal(await kubeletPull(suite.lab, WORKER, `${httpsIp}:5000/${IMAGE}`), image.configDigest);
        assert.equal(await kubeletPull(suite.lab, WORKER, `${httpIp}:5000/${IMAGE}`), image.configDigest);
        assert.match(await inside(WORKER, "ctr -n k8s.io images ls -q"), new RegExp(`${httpsIp.replace(/\./g, "\\.")}:5000/team/app:1\\.0`));
    });

    it("a pull without a login (kubeadm's preflight, containerd's own of the sandbox image) gets the registry's login from containerd's configuration, which holds it at mode 600", async () => {
        await inside(WORKER, `ctr -n k8s.io images rm '${httpsIp}:5000/${IMAGE}' >/dev/null`);
        assert.equal(await kubeletPull(suite.lab, WORKER, `${httpsIp}:5000/${IMAGE}`, { withoutLogin: true }), image.configDigest);
        assert.equal(await inside(WORKER, "stat -c %a /etc/containerd/config.toml"), "600\n");
        const config = await inside(WORKER, "containerd config dump");
        assert.match(config, new RegExp(`\\[plugins\\."io\\.containerd\\.grpc\\.v1\\.cri"\\.registry\\.configs\\."${httpsIp.replace(/\./g, "\\.")}:5000"\\.auth\\]\\n\\s+auth = "${Buffer.from(`user01:${LOGIN_PASSWORD}`).toString("base64")}"`), "the login as containerd reads it");
        assert.doesNotMatch(config, new RegExp(`configs\\."${httpIp.replace(/\./g, "\\.")}:5000"`), "none for the registry without one");
    });

    it("scale-out: the new worker joins with the connections, and pulls", async () => {
        cluster.set("workers.count", 2);
        const since = cluster.steps.length;
        await cluster.up();
        const created = cluster.stepsOf(since, /^rc-kubeadm-worker-1-(registries|member)$/).filter((s) => s.op === "create");
        assert.deepEqual(created.map((s) => s.name), ["rc-kubeadm-worker-1-registries", "rc-kubeadm-worker-1-member"]);
        assert.ok(created[0].ended! <= created[1].started, "connected before it joins");
        assert.deepEqual(cluster.stepsOf(since, /-registries$/).filter((s) => s.op !== "same").map((s) => s.name), ["rc-kubeadm-worker-1-registries"], "the other nodes untouched");
        assert.equal(await kubeletPull(suite.lab, "rc-worker-1", `${httpsIp}:5000/${IMAGE}`), image.configDigest);
    });

    it("a worker whose Node was deleted is reset and joins again, and keeps its registry login (kubeadm reset empties /var/lib/kubelet)", async () => {
        await inside("rc-master-0", `kubectl --kubeconfig /etc/kubernetes/admin.conf delete node ${WORKER}`);
        await cluster.refresh();
        const callsBefore = fs.readFileSync(path.join(suite.lab.clusterState, "rc", "calls"), "utf8").trim().split("\n").length;
        await cluster.up();
        const own = fs.readFileSync(path.join(suite.lab.clusterState, "rc", "calls"), "utf8").trim().split("\n").slice(callsBefore).filter((c) => c.startsWith(`${WORKER} kubeadm `));
        assert.deepEqual(own.map((c) => c.split(" ").slice(1, 3).join(" ")), ["kubeadm reset", "kubeadm join"]);
        assert.equal(await inside(WORKER, "stat -c %a /var/lib/kubelet/config.json"), "600\n");
        await inside(WORKER, `ctr -n k8s.io images rm '${httpsIp}:5000/${IMAGE}' >/dev/null`);
        assert.equal(await kubeletPull(suite.lab, WORKER, `${httpsIp}:5000/${IMAGE}`), image.configDigest, "the login still works");
    });

    it("drift: a registry's hosts.toml deleted on a node is found by refresh and written again by the next up", async () => {
        await inside(WORKER, `rm -rf '/etc/containerd/certs.d/${httpIp}:5000'`);
        await cluster.refresh();
        assert.deepEqual(cluster.outputsOf("rc-kubeadm-worker-0-registries").connected, [`${httpsIp}:5000`]);
        const result = await cluster.up();
        assert.equal(result.changes.update, 1);
        assert.equal(await kubeletPull(suite.lab, WORKER, `${httpIp}:5000/${IMAGE}`), image.configDigest);
    });

    it("a wrong CA fails the pull (the connection is updated on the nodes); so does a wrong password", async () => {
        cluster.set("privateRegistries", [{ ...(cluster.config.privateRegistries as any[])[0], caCertificateFile: "Files/registries/other-ca.crt" }, (cluster.config.privateRegistries as any[])[1]]);
        let result = await cluster.up();
        assert.deepEqual(result.changes, { same: result.changes.same, update: 3 }, "each node's connections updated, nothing replaced");
        await assert.rejects(kubeletPull(suite.lab, WORKER, `${httpsIp}:5000/${IMAGE}`), /x509|certificate/);
        cluster.set("privateRegistries", [{ ...(cluster.config.privateRegistries as any[])[0], caCertificateFile: "Files/registries/ca.crt", password: "registry-login-pw-2" }, (cluster.config.privateRegistries as any[])[1]]);
        result = await cluster.up();
        assert.equal(result.changes.update, 3);
        await assert.rejects(kubeletPull(suite.lab, WORKER, `${httpsIp}:5000/${IMAGE}`), /401|unauthorized/i);
        await assert.rejects(kubeletPull(suite.lab, WORKER, `${httpsIp}:5000/${IMAGE}`, { withoutLogin: true }), /401|unauthorized/i, "containerd's copy updated too");
    });

    it("a registry removed from config is removed from the nodes; the others stay", async () => {
        cluster.set("privateRegistries", [(cluster.config.privateRegistries as any[])[1]]);
        await cluster.up();
        assert.equal(await inside(WORKER, "ls /etc/containerd/certs.d"), `${httpIp}:5000\n`);
        assert.doesNotMatch(await inside(WORKER, "cat /etc/hosts"), /registry\.lab/);
        assert.equal(await inside(WORKER, "test -e /var/lib/kubelet/config.json && echo present || echo gone"), "gone\n", "no login left");
        assert.doesNotMatch(await inside(WORKER, "cat /etc/containerd/config.toml"), /registry logins|auth =/, "nor in containerd's configuration");
        assert.equal(await kubeletPull(suite.lab, WORKER, `${httpIp}:5000/${IMAGE}`), image.configDigest);
    });

    it("a bad login for the registry is refused before anything runs, naming the field", async () => {
        httpsRegistry.set("registry.users", [{ username: "user01", password: LOGIN_PASSWORD }, { username: "user01", password: "x1234" }]);
        const e = await failure(suite, () => httpsRegistry.up());
        assert.match(e.message, /registry\.users\[1\]\.username/);
        httpsRegistry.set("registry.users", [{ username: "user01", password: LOGIN_PASSWORD }]);
    });
});
