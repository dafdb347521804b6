/**
 * A Kubernetes package repository laid out as pkgs.k8s.io serves one, for an air-gapped lab: under ROOT,
 * `v<minor>/deb/` is a flat repository (`deb [signed-by=<key>] ROOT/v<minor>/deb/ /`, what node preparation
 * writes for `kubernetes.packageRepository`) holding Release, its signatures InRelease and Release.gpg, the
 * armoured key Release.key, Packages, and the packages under `amd64/`.
 * The packages are made with dpkg-deb from the binaries tools/build.sh built, with the files, versions and
 * dependencies of kubernetes/release's packaging (cmd/krel/templates/latest: kubelet.spec, kubeadm.spec,
 * kubectl.spec, kubernetes-cni.spec, cri-tools.spec and metadata.yaml, as its debbuild path lays them out):
 *   - kubelet <version>-1.1: /usr/bin/kubelet, its unit, /etc/default/kubelet, /var/lib/kubelet and
 *     /etc/kubernetes/manifests; Depends kubernetes-cni (>= 1.2.0), mount, util-linux; Recommends iptables;
 *   - kubeadm <version>-1.1: /usr/bin/kubeadm and the kubelet drop-in 10-kubeadm.conf; for 1.30 and 1.31 it
 *     depends on cri-tools (>= 1.30.0), which the lab does not build (no crictl): that one dependency is left out;
 *   - kubectl <version>-1.1: /usr/bin/kubectl;
 *   - kubernetes-cni <plugins' version>-1.1: the CNI plugins the lab builds, in /opt/cni/bin, and /etc/cni/net.d.
 * No maintainer scripts: the spec's systemd post scripts enable the unit, which node preparation does itself.
 * Signed with a key made for the run (gpg, in a home of its own that goes afterwards).
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PROJECT_DIR } from "./program";
import { BuiltTools } from "./tools";

const REVISION = "1.1";
const NODE_FILES = path.join(PROJECT_DIR, "test/lab/node");
const UNIT_DIR = "usr/lib/systemd/system";

interface DebianPackage {
    name: string;
    version: string;
    section: string;
    description: string;
    depends?: string;
    recommends?: string;
    /** Path in the package (no leading slash) → the file to copy (mode 0755 for binaries) or its text. */
    files: Record<string, { from: string; mode: number } | { text: string; mode: number }>;
}

function packagesOf(tools: BuiltTools, version: string): DebianPackage[] {
    const bin = (tool: string, name: string) => ({ from: path.join(tools.bins[tool], name), mode: 0o755 });
    const node = (name: string) => ({ text: fs.readFileSync(path.join(NODE_FILES, name), "utf8"), mode: 0o644 });
    const plugins = /github\.com\/containernetworking\/plugins v(\d+\.\d+\.\d+)/.exec(fs.readFileSync(path.join(PROJECT_DIR, "tools/cni/go.mod"), "utf8"))?.[1];
    if (!plugins) throw new Error("tools/cni/go.mod requires no containernetworking/plugins version");
    const keep = { text: "", mode: 0o644 };
    return [
        {
            name: "kubelet",
            version,
            section: "net",
            description: "Node agent for Kubernetes clusters",
            depends: "kubernetes-cni (>= 1.2.0), mount, util-linux",
            recommends: "iptables (>= 1.8.4)",
            files: {
                "usr/bin/kubelet": bin("kube", "kubelet"),
                [`${UNIT_DIR}/kubelet.service`]: { ...node("kubelet.service"), mode: 0o600 },
                "etc/default/kubelet": { text: "KUBELET_EXTRA_ARGS=\n", mode: 0o644 },
                "var/lib/kubelet/.kubelet-keep": keep,
                "etc/kubernetes/manifests/.kubelet-keep": keep,
            },
        },
        {
            name: "kubeadm",
            version,
            section: "admin",
            description: "Command-line utility for administering a Kubernetes cluster",
            files: { "usr/bin/kubeadm": bin("kube", "kubeadm"), [`${UNIT_DIR}/kubelet.service.d/10-kubeadm.conf`]: node("10-kubeadm.conf") },
        },
        { name: "kubectl", version, section: "admin", description: "Command-line utility for interacting with a Kubernetes cluster", files: { "usr/bin/kubectl": bin("kube", "kubectl") } },
        {
            name: "kubernetes-cni",
            version: plugins,
            section: "net",
            description: "Binaries required to provision kubernetes container networking",
            files: {
                ...Object.fromEntries(["bridge", "host-local", "loopback", "portmap"].map((p) => [`opt/cni/bin/${p}`, bin("cni", p)])),
                "etc/cni/net.d/.kubernetes-cni-keep": keep,
            },
        },
    ];
}

function buildDeb(p: DebianPackage, work: string, out: string): void {
    const root = path.join(work, p.name);
    for (const [file, source] of Object.entries(p.files)) {
        const target = path.join(root, file);
        fs.mkdirSync(path.dirname(target), { recursive: true });
        if ("from" in source) fs.copyFileSync(source.from, target);
        else fs.writeFileSync(target, source.text);
        fs.chmodSync(target, source.mode);
    }
    const control = [
        `Package: ${p.name}`,
        `Version: ${p.version}-${REVISION}`,
        "Architecture: amd64",
        "Maintainer: Kubernetes Authors <dev@kubernetes.io>",
        `Section: ${p.section}`,
        "Priority: optional",
        "Homepage: https://kubernetes.io",
        ...(p.depends ? [`Depends: ${p.depends}`] : []),
        ...(p.recommends ? [`Recommends: ${p.recommends}`] : []),
        `Description: ${p.description}`,
        ` ${p.description}.`,
    ];
    fs.mkdirSync(path.join(root, "DEBIAN"), { recursive: true });
    fs.writeFileSync(path.join(root, "DEBIAN/control"), `${control.join("\n")}\n`);
    // Uncompressed: the binaries are most of it, and the lab's network is a bridge.
    execFileSync("dpkg-deb", ["--root-owner-group", "-Znone", "--build", root, path.join(out, `${p.name}_${p.version}-${REVISION}_amd64.deb`)], { stdio: "pipe" });
}

/** Writes the repository for Kubernetes `version` (`1.31.4`) under `root`; returns the package versions, by name. */
export function kubernetesPackageRepository(root: string, tools: BuiltTools, version: string): Record<string, string> {
    const minor = version.split(".").slice(0, 2).join(".");
    const repo = path.join(root, `v${minor}`, "deb");
    fs.mkdirSync(path.join(repo, "amd64"), { recursive: true });
    const work = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-debs-"));
    const gnupg = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-gnupg-"));
    try {
        const packages = packagesOf(tools, version);
        for (const p of packages) buildDeb(p, work, path.join(repo, "amd64"));
        const index = execFileSync("dpkg-scanpackages", ["--multiversion", "amd64", "/dev/null"], { cwd: repo, stdio: ["ignore", "pipe", "pipe"] });
        fs.writeFileSync(path.join(repo, "Packages"), index);
        const sha256 = createHash("sha256").update(index).digest("hex");
        const release = ["Origin: k8s-vnf lab", "Label: k8s-vnf lab", "Architectures: amd64", `Date: ${new Date().toUTCString()}`, "SHA256:", ` ${sha256} ${index.length} Packages`];
        fs.writeFileSync(path.join(repo, "Release"), `${release.join("\n")}\n`);
        const gpg = (...args: string[]) => execFileSync("gpg", ["--batch", "--homedir", gnupg, "--pinentry-mode", "loopback", "--passphrase", "", ...args], { stdio: "pipe" });
        gpg("--quick-gen-key", "k8s-vnf lab packages <packages@lab.invalid>", "ed25519", "sign", "1d");
        gpg("--clearsign", "--output", path.join(repo, "InRelease"), path.join(repo, "Release"));
        gpg("--armor", "--detach-sign", "--output", path.join(repo, "Release.gpg"), path.join(repo, "Release"));
        fs.writeFileSync(path.join(repo, "Release.key"), gpg("--armor", "--export"));
        return Object.fromEntries(packages.map((p) => [p.name, `${p.version}-${REVISION}`]));
    } finally {
        // The agent gpg started for the key, stopped by its own home.
        execFileSync("gpgconf", ["--homedir", gnupg, "--kill", "gpg-agent"], { stdio: "ignore" });
        fs.rmSync(work, { recursive: true, force: true });
        fs.rmSync(gnupg, { recursive: true, force: true });
    }
}
