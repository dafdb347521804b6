import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { hostsToml, kubeletCredentials, registryConfig, registryDirectories, registryHostsLines } from "../components/registryPlan";
import { imageArchiveFormat } from "../config/imageArchive";
import { CONTAINERD_LOGINS_LIBRARY, loadNodeScript } from "../providers/kubernetes/scripts";
import { dockerArchive, ociArchive } from "./support/ociImage";

const CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

/** One of nodePrep.sh's containerd filters, run here on a configuration text: [exit status, output]. */
function filtered(config: string, ...action: string[]): [number, string] {
    const r = spawnSync("bash", ["-c", loadNodeScript("nodePrep.sh", undefined, CONTAINERD_LOGINS_LIBRARY).text, "nodePrep.sh", ...action], { input: config, encoding: "utf8" });
    return [r.status ?? -1, r.stdout];
}
const withHostsDir = (config: string) => filtered(config, "registry-hosts-dir");

// The registry sections of `containerd config default`, as each version prints them (docs/cri/config.md at
// v1.7.0 and v2.1.0; internal/cri/config/config_unix.go at v2.2.0 for its new default).
const CONTAINERD_1_7 = `version = 2
[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      ConfigPath = ""
      SystemdCgroup = true
    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = ""

      [plugins."io.containerd.grpc.v1.cri".registry.auths]

      [plugins."io.containerd.grpc.v1.cri".registry.mirrors]
`;
const CONTAINERD_2_1 = `version = 3
[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'

    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = ''

  [plugins.'io.containerd.transfer.v1.local']
    config_path = ''
    max_concurrent_downloads = 3
`;
const CONTAINERD_2_2 = CONTAINERD_2_1.replace("config_path = ''\n\n", "config_path = '/etc/containerd/certs.d:/etc/docker/certs.d'\n\n");

describe("registry plan: what the registry VNF and the nodes' connections write", () => {
    it("the registry's config: storage on the volume's mount, the port, TLS and htpasswd only when asked", () => {
        const plain = registryConfig({ port: 5000, tls: false, logins: false });
        assert.match(plain, /^storage:\n {2}filesystem:\n {4}rootdirectory: \/var\/lib\/docker-registry$/m);
        assert.match(plain, /^ {2}addr: :5000$/m);
        assert.doesNotMatch(plain, /tls:|auth:/, "Debian's default config turns htpasswd on; ours does only with logins");
        const full = registryConfig({ port: 5443, tls: true, logins: true });
        assert.match(full, /^ {2}addr: :5443\n[\s\S]* {2}tls:\n {4}certificate: \/etc\/docker\/registry\/tls\.crt\n {4}key: \/etc\/docker\/registry\/tls\.key$/m);
        assert.match(full, /^auth:\n {2}htpasswd:\n {4}realm: k8s-vnf-registry\n {4}path: \/etc\/docker\/registry\/htpasswd$/m);
    });

    it("hosts.toml: the registry as the one host, both its [host] entry and the server (containerd tries the server last whatever the [host] entries say, and containerd 1.6 cannot read a file without a [host] entry), pull and resolve, with the CA; http by its URL; https with the CA in the registry's directory", () => {
        assert.equal(
            hostsToml({ protocol: "http", server: "192.168.0.10:5000" }),
            '# Written by k8s-vnf (privateRegistries); rewritten on every update.\nserver = "http://192.168.0.10:5000"\ncapabilities = ["pull", "resolve"]\n\n[host."http://192.168.0.10:5000"]\n  capabilities = ["pull", "resolve"]\n',
        );
        const https = hostsToml({ protocol: "https", server: "registry.example.com", caCertificate: CA });
        assert.equal(
            https,
            '# Written by k8s-vnf (privateRegistries); rewritten on every update.\nserver = "https://registry.example.com"\ncapabilities = ["pull", "resolve"]\nca = "/etc/containerd/certs.d/registry.example.com/ca.crt"\n\n[host."https://registry.example.com"]\n  capabilities = ["pull", "resolve"]\n  ca = "/etc/containerd/certs.d/registry.example.com/ca.crt"\n',
        );
        assert.doesNotMatch(hostsToml({ protocol: "https", server: "r.example:443" }), /ca =/, "no CA given: the system's");
    });

    it("a mirror: each mirrored name's directory has the mirror as its one host, with the mirror's CA, so its pulls never reach the original; one directory per registry and per mirrored name", () => {
        const mirror = { protocol: "https" as const, server: "10.0.0.60:5000", caCertificate: CA, mirrorOf: ["docker.io", "quay.io"] };
        const dirs = registryDirectories([mirror, { protocol: "http", server: "192.168.0.10:5000", mirrorOf: [] }]);
        assert.deepEqual(
            dirs.map((d) => [d.server, d.caCertificate === CA]),
            [
                ["10.0.0.60:5000", true],
                ["docker.io", false],
                ["quay.io", false],
                ["192.168.0.10:5000", false],
            ],
        );
        for (const d of dirs.slice(1, 3)) assert.equal(d.hostsToml, hostsToml(mirror), `${d.server}: the mirror's own hosts.toml, its CA in the mirror's directory`);
    });

    it("the kubelet's credentials: one Docker config.json entry per registry with a login, keyed by host[:port]; none without logins", () => {
        const registries = [
            { protocol: "http" as const, server: "192.168.0.10:5000" },
            { protocol: "https" as const, server: "registry.example.com", username: "user01", password: "p:w" },
        ];
        assert.deepEqual(JSON.parse(kubeletCredentials(registries)!), { auths: { "registry.example.com": { auth: Buffer.from("user01:p:w").toString("base64") } } });
        assert.equal(kubeletCredentials(registries.slice(0, 1)), undefined);
        assert.deepEqual(registryHostsLines([{ protocol: "https", server: "r.example", hostsEntry: { ip: "192.168.0.20", hostname: "r.example" } }, registries[0]]), ["192.168.0.20 r.example"]);
    });

    it("node preparation points containerd 1.x and 2.x at the hosts directory: the CRI registry's config_path (and 2.x's transfer service's), nothing else", () => {
        for (const [name, config] of [["1.7", CONTAINERD_1_7], ["2.1", CONTAINERD_2_1], ["2.2", CONTAINERD_2_2]]) {
            const [status, out] = withHostsDir(config);
            assert.equal(status, 0, name);
            const set = out.split("\n").filter((l) => /config_?path/i.test(l));
            const expected = name === "1.7" ? ['      ConfigPath = ""', '      config_path = "/etc/containerd/certs.d"'] : ['      config_path = "/etc/containerd/certs.d"', '    config_path = "/etc/containerd/certs.d"'];
            assert.deepEqual(set, expected, name);
            assert.equal(out.replace(/config_path = .*/g, ""), config.replace(/config_path = .*/g, ""), `${name}: the rest as it was`);
        }
        assert.equal(withHostsDir('version = 2\n[plugins."io.containerd.grpc.v1.cri".registry.mirrors]\n')[0], 3, "no config_path to set: refused");
    });

    it("node preparation gives containerd 1.x and 2.x the pause image kubeadm lists as its sandbox image, nothing else", () => {
        // `containerd config default` of Debian's 1.6.20 (the CRI plugin's sandbox_image) and of 2.1 (the images plugin's pinned_images).
        const v2 = 'version = 2\n[plugins]\n  [plugins."io.containerd.grpc.v1.cri"]\n    sandbox_image = "registry.k8s.io/pause:3.6"\n    [plugins."io.containerd.grpc.v1.cri".registry]\n      config_path = ""\n';
        const v3 = "version = 3\n[plugins]\n  [plugins.'io.containerd.cri.v1.images']\n    snapshotter = 'overlayfs'\n\n    [plugins.'io.containerd.cri.v1.images'.pinned_images]\n      sandbox = 'registry.k8s.io/pause:3.10'\n";
        const image = "registry.example:5000/k8s/pause:3.10";
        assert.deepEqual(filtered(v2, "sandbox-image", image), [0, v2.replace("registry.k8s.io/pause:3.6", image)]);
        assert.deepEqual(filtered(v3, "sandbox-image", image), [0, v3.replace("registry.k8s.io/pause:3.10", image)]);
        assert.equal(filtered(v2.replace("sandbox_image", "# sandbox_image"), "sandbox-image", image)[0], 3, "no sandbox image to set: refused");
        assert.equal(filtered('version = 2\n[plugins."io.containerd.grpc.v1.cri".registry]\n  sandbox_image = "x"\n', "sandbox-image", image)[0], 3, "only the CRI plugin's own setting");
    });

    it("containerd's copy of the logins: the CRI plugin's registry.configs auth table per registry with a login, under the plugin of the configuration's version (1.x: io.containerd.grpc.v1.cri, 2.x: io.containerd.cri.v1.images)", () => {
        const block = (config: string, logins: string) => {
            const r = spawnSync("bash", ["-c", loadNodeScript("registryConnections.sh", undefined, CONTAINERD_LOGINS_LIBRARY).text, "registryConnections.sh", "logins-block"], { input: config, encoding: "utf8", env: { ...process.env, CONTAINERD_LOGINS: logins } });
            assert.equal(r.status, 0, r.stderr);
            return r.stdout;
        };
        const logins = `10.0.0.5:5000 ${Buffer.from("user01:pw").toString("base64")}\nregistry.example ${Buffer.from("u2:p2").toString("base64")}`;
        assert.equal(
            block(CONTAINERD_1_7, logins),
            '[plugins."io.containerd.grpc.v1.cri".registry.configs."10.0.0.5:5000".auth]\n  auth = "dXNlcjAxOnB3"\n[plugins."io.containerd.grpc.v1.cri".registry.configs."registry.example".auth]\n  auth = "dTI6cDI="\n',
        );
        assert.equal(block("version = 3\n[plugins]\n", logins.split("\n")[0]), "[plugins.'io.containerd.cri.v1.images'.registry.configs.\"10.0.0.5:5000\".auth]\n  auth = \"dXNlcjAxOnB3\"\n");
        assert.equal(block(CONTAINERD_1_7, ""), "", "no login, no table");
    });

    it("image archives are told apart by their tar headers: docker save's, an OCI layout's, or refused", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-archive-"));
        try {
            const oci = ociArchive(path.join(dir, "oci.tar"), { files: { "hello.txt": "hi" } }).file;
            const docker = dockerArchive(path.join(dir, "docker.tar"), { repoTag: "demo:1", files: { "hello.txt": "hi" } }).file;
            assert.deepEqual(imageArchiveFormat(oci), { format: "oci-archive" });
            assert.deepEqual(imageArchiveFormat(docker), { format: "docker-archive" });
            const other = path.join(dir, "other.tar");
            spawnSync("tar", ["-cf", other, "-C", dir, "oci.tar"]);
            assert.match((imageArchiveFormat(other) as { problem: string }).problem, /neither a `docker save` archive \(manifest\.json\) nor an OCI image layout/);
            fs.writeFileSync(path.join(dir, "text.tar"), "x".repeat(2048));
            assert.match((imageArchiveFormat(path.join(dir, "text.tar")) as { problem: string }).problem, /not a tar archive/);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});
