/**
 * The container images a kubeadm cluster of the lab runs, made from the real binaries tools/build.sh built, one
 * `docker save` archive each (ociImage.ts), laid out as their releases' images are:
 *   - kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy: the binary at /usr/local/bin
 *     (kubernetes build/server-image/Dockerfile; kubeadm's manifests name the command, found on PATH);
 *     kube-proxy's with iptables and conntrack, as its base image (distroless-iptables) has them;
 *   - etcd: /usr/local/bin/etcd and etcdctl (etcd's Dockerfile-release);
 *   - coredns: /coredns, the entrypoint (coredns Dockerfile; its Deployment gives only args);
 *   - pause: /pause, the entrypoint (kubernetes build/pause/Dockerfile);
 *   - flannel: /opt/bin/flanneld (the entrypoint) and /opt/bin/install-conf, with iptables (flannel
 *     images/Dockerfile); flannel-cni-plugin: /flannel, and a `cp` its DaemonSet runs to install it;
 *   - nginx (what seed 003's CNF package runs): Debian's nginx with its /etc/nginx and default page, started as
 *     the nginx image starts it (`nginx -g 'daemon off;'`, its Dockerfile's CMD); its logs stay in files (the
 *     image links them to the container's output).
 * iptables and cp are Debian's, from the lab's rootfs (debianFiles.ts), where the releases take Alpine's or
 * Debian's: iptables in its nf_tables mode, as Debian's iptables is by default on the nodes (the releases'
 * iptables-wrapper chooses the mode the node's rules are in; that chooser is not built here).
 * Which images, under which names: what the real kubeadm lists for the version (`kubeadm config images list`),
 * the sandbox image containerd's own default configuration names (`containerd config default` of the lab's
 * rootfs; unless an image repository is given, whose pause image the program makes the sandbox image), and the
 * images the cluster's CNI manifest names.
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { Lab } from "../lab/lab";
import { debianFiles } from "./debianFiles";
import { dockerArchive, ImageFiles } from "./ociImage";
import { BuiltTools } from "./tools";

const run = promisify(execFile);

/** Debian's iptables in nf_tables mode under the names its programs are called by (xtables-nft-multi is one
 * program for all of them), with the extensions it loads. */
const IPTABLES = Object.fromEntries(
    ["iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"].map((name) => [`/usr/sbin/${name}`, "/usr/sbin/xtables-nft-multi"]),
);
const XTABLES_EXTENSIONS = "/usr/lib/x86_64-linux-gnu/xtables";

/** Each image's files and entrypoint, by the last part of its repository name. */
async function layout(repository: string, bins: Record<string, string>, rootfs: string): Promise<{ files: ImageFiles; entrypoint?: string[]; directories?: string[] }> {
    const binary = (tool: string, name: string) => ({ content: fs.readFileSync(path.join(bins[tool], name)), mode: 0o755 });
    const name = repository.split("/").pop()!;
    switch (name) {
        case "kube-apiserver":
        case "kube-controller-manager":
        case "kube-scheduler":
            return { files: { [`usr/local/bin/${name}`]: binary("kube", name) } };
        case "kube-proxy":
            return { files: { ...(await debianFiles(rootfs, { ...IPTABLES, "/usr/sbin/conntrack": "/usr/sbin/conntrack" }, [XTABLES_EXTENSIONS])), [`usr/local/bin/${name}`]: binary("kube", name) } };
        case "etcd":
            return { files: { "usr/local/bin/etcd": binary("etcd", "etcd"), "usr/local/bin/etcdctl": binary("etcd", "etcdctl") } };
        case "coredns":
            return { files: { coredns: binary("coredns", "coredns") }, entrypoint: ["/coredns"] };
        case "pause":
            return { files: { pause: binary("kube", "pause") }, entrypoint: ["/pause"] };
        case "flannel":
            return {
                files: { ...(await debianFiles(rootfs, IPTABLES, [XTABLES_EXTENSIONS])), "opt/bin/flanneld": binary("cni", "flanneld"), "opt/bin/install-conf": binary("cni", "install-conf") },
                entrypoint: ["/opt/bin/flanneld"],
            };
        case "flannel-cni-plugin":
            return { files: { ...(await debianFiles(rootfs, { "/bin/cp": "/usr/bin/cp" })), flannel: binary("flannel-cni-plugin", "flannel") } };
        case "nginx":
            return {
                files: {
                    ...(await debianFiles(rootfs, { "/usr/sbin/nginx": "/usr/sbin/nginx" }, ["/etc/nginx", "/var/www/html"])),
                    // nginx.conf's `user www-data`: the workers' user, looked up in the image's own files.
                    "etc/passwd": "root:x:0:0:root:/root:/bin/sh\nwww-data:x:33:33:www-data:/var/www:/usr/sbin/nologin\n",
                    "etc/group": "root:x:0:\nwww-data:x:33:\n",
                },
                directories: ["/var/log/nginx", "/var/lib/nginx", "/run"],
                entrypoint: ["/usr/sbin/nginx", "-g", "daemon off;"],
            };
        default:
            throw new Error(`no lab image for ${repository}: the cluster runs an image test/support/kubeImages.ts does not know`);
    }
}

/** A manifest's `image:` line: the key with its indentation, then the image (quotes left out). */
const IMAGE_LINE = /^(\s*(?:-\s+)?image:\s*)["']?([^"'\s]+)["']?\s*$/gm;

/** The images a manifest's containers name (its `image:` fields), as containerd's CRI plugin resolves them. */
export function manifestImages(manifest: string): string[] {
    return [...manifest.matchAll(IMAGE_LINE)].map((m) => normalizedReference(m[2]));
}

/**
 * A reference in full, as the CRI plugin looks an image up: distribution/reference v0.5.0 `splitDockerDomain`
 * (a first part with a dot or a port, or `localhost`, or with capitals, is a registry; else Docker Hub's,
 * `index.docker.io` read as `docker.io`, whose one-part names are in `library/`) and `TagNameOnly` (`:latest`
 * without a tag or digest). `nginx` is `docker.io/library/nginx:latest`.
 */
export function normalizedReference(name: string): string {
    const slash = name.indexOf("/");
    const first = slash < 0 ? "" : name.slice(0, slash);
    const hasRegistry = slash >= 0 && (/[.:]/.test(first) || first === "localhost" || first.toLowerCase() !== first);
    let [domain, rest] = hasRegistry ? [first, name.slice(slash + 1)] : ["docker.io", name];
    if (domain === "index.docker.io") domain = "docker.io";
    if (domain === "docker.io" && !rest.includes("/")) rest = `library/${rest}`;
    const full = `${domain}/${rest}`;
    return /[:@]/.test(full.slice(full.lastIndexOf("/") + 1)) ? full : `${full}:latest`;
}

/** The manifest with each image it names moved to `registry` (`host:port`), its path and tag kept: as an air-gapped site rewrites a release's manifest. */
export function inRegistry(manifest: string, registry: string): string {
    return manifest.replace(IMAGE_LINE, (_line, key: string, image: string) => `${key}${registry}/${normalizedReference(image).replace(/^[^/]+\//, "")}`);
}

/** The file `kubernetesImages` writes an image's archive to, in its directory. */
export const archiveName = (image: string) => `${image.replace(/[/:]/g, "_")}.tar`;

/**
 * Writes the archives into `dir` (made if missing), with the images `manifests` name besides kubeadm's; returns
 * the image names. With `imageRepository`, kubeadm's images are named there (`kubeadm config images list
 * --image-repository`), and containerd's default sandbox image is not made: the program sets kubeadm's.
 */
export async function kubernetesImages(dir: string, tools: BuiltTools, version: string, manifests: string[] = [], options: { imageRepository?: string } = {}): Promise<string[]> {
    const rootfs = await Lab.rootfs();
    const repository = options.imageRepository ? ["--image-repository", options.imageRepository] : [];
    const listed = (await run(path.join(tools.bins.kube, "kubeadm"), ["config", "images", "list", "--kubernetes-version", version, ...repository])).stdout.split("\n").filter(Boolean);
    const names = [...new Set([...listed, ...(options.imageRepository ? [] : [await defaultSandboxImage(rootfs)]), ...manifests.flatMap(manifestImages)])];
    await writeImages(dir, tools, names, rootfs);
    return names;
}

/** The sandbox image of the lab rootfs's containerd, by its default configuration. */
async function defaultSandboxImage(rootfs: string): Promise<string> {
    const defaults = (await run("chroot", [rootfs, "containerd", "config", "default"])).stdout;
    const sandbox = /^\s*sandbox_image = "([^"]+)"$/m.exec(defaults)?.[1];
    if (!sandbox) throw new Error("the lab rootfs's containerd names no sandbox_image in its default configuration");
    return sandbox;
}

/** Writes the archives of the images `names` into `dir` (made if missing), from the lab's rootfs. */
export async function writeImages(dir: string, tools: BuiltTools, names: string[], rootfs?: string): Promise<void> {
    rootfs ??= await Lab.rootfs();
    fs.mkdirSync(dir, { recursive: true });
    for (const name of names) {
        if (name.includes("@")) throw new Error(`${name}: the lab makes images by tag, not by digest`);
        const repository = name.slice(0, name.lastIndexOf(":"));
        dockerArchive(path.join(dir, archiveName(name)), { repoTag: name, ...(await layout(repository, tools.bins, rootfs)) });
    }
}
