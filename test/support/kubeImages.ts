/**
 * The container images a kubeadm cluster of the lab runs, made from the real binaries tools/build.sh built, one
 * `docker save` archive each (ociImage.ts), laid out as their releases' images are:
 *   - kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy: the binary at /usr/local/bin
 *     (kubernetes build/server-image/Dockerfile; kubeadm's manifests name the command, found on PATH);
 *   - etcd: /usr/local/bin/etcd and etcdctl (etcd's Dockerfile-release);
 *   - coredns: /coredns, the entrypoint (coredns Dockerfile; its Deployment gives only args);
 *   - pause: /pause, the entrypoint (kubernetes build/pause/Dockerfile).
 * Which images, under which names: what the real kubeadm lists for the version (`kubeadm config images list`),
 * and the sandbox image containerd's own default configuration names (`containerd config default` of the
 * lab's rootfs), which the product leaves as containerd has it.
 *
 * Not the real images' other files: kube-proxy's image carries iptables (distroless-iptables) and this one does
 * not, so kube-proxy cannot program Services here.
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { Lab } from "../lab/lab";
import { dockerArchive, ImageFiles } from "./ociImage";
import { BuiltTools } from "./tools";

const run = promisify(execFile);

/** Each image's files and entrypoint, by the last part of its repository name. */
function layout(repository: string, bins: Record<string, string>): { files: ImageFiles; entrypoint?: string[] } {
    const binary = (tool: string, name: string) => ({ content: fs.readFileSync(path.join(bins[tool], name)), mode: 0o755 });
    const name = repository.split("/").pop()!;
    switch (name) {
        case "kube-apiserver":
        case "kube-controller-manager":
        case "kube-scheduler":
        case "kube-proxy":
            return { files: { [`usr/local/bin/${name}`]: binary("kube", name) } };
        case "etcd":
            return { files: { "usr/local/bin/etcd": binary("etcd", "etcd"), "usr/local/bin/etcdctl": binary("etcd", "etcdctl") } };
        case "coredns":
            return { files: { coredns: binary("coredns", "coredns") }, entrypoint: ["/coredns"] };
        case "pause":
            return { files: { pause: binary("kube", "pause") }, entrypoint: ["/pause"] };
        default:
            throw new Error(`no lab image for ${repository}: the kubeadm of this version runs an image test/support/kubeImages.ts does not know`);
    }
}

/** Writes the archives into `dir` (made if missing); returns the image names. */
export async function kubernetesImages(dir: string, tools: BuiltTools, version: string): Promise<string[]> {
    const listed = (await run(path.join(tools.bins.kube, "kubeadm"), ["config", "images", "list", "--kubernetes-version", version])).stdout.split("\n").filter(Boolean);
    const defaults = (await run("chroot", [await Lab.rootfs(), "containerd", "config", "default"])).stdout;
    const sandbox = /^\s*sandbox_image = "([^"]+)"$/m.exec(defaults)?.[1];
    if (!sandbox) throw new Error("the lab rootfs's containerd names no sandbox_image in its default configuration");
    const names = [...new Set([...listed, sandbox])];
    fs.mkdirSync(dir, { recursive: true });
    for (const name of names) {
        const repository = name.slice(0, name.lastIndexOf(":"));
        dockerArchive(path.join(dir, `${name.replace(/[/:]/g, "_")}.tar`), { repoTag: name, ...layout(repository, tools.bins) });
    }
    return names;
}
