/**
 * A registry image for tests, as the product's "image" runtime of the registry step runs it on containerd
 * (providers/registry/registryServer.sh: `ctr run ... IMAGE registry /bin/registry serve
 * /etc/docker/registry/config.yml`): Debian's build of the CNCF distribution registry (docker-registry
 * 2.8.2+ds1, /usr/bin/docker-registry) taken from the lab's cached rootfs (`Lab.rootfs()`), laid out as
 * distribution's official image is (its Dockerfile: the binary at /bin/registry, the config at
 * /etc/docker/registry/config.yml, storage in /var/lib/registry, port 5000), written by ociImage.ts.
 *
 *   registryImage(file, "docker-archive" | "oci-archive")   the image tar at `file`; resolves to its digests
 *                                                            and the name it carries
 *
 * The layer: /bin/registry (0755); the shared objects `ldd` names for the binary inside the rootfs (Debian's
 * build links glibc dynamically: libc.so.6 and the loader), each at the path the loader looks for it (the
 * loader at the binary's PT_INTERP path, /lib64/ld-linux-x86-64.so.2; libraries in its default directory
 * /lib/x86_64-linux-gnu), read through the rootfs's own symlinks, with the rootfs's modes; /etc/passwd and
 * /etc/group with root only (the registry runs as root, as in the official image); and the official image's
 * config (distribution's cmd/registry/config-example.yml, v2.8.2: no auth, filesystem storage in
 * /var/lib/registry), which the product mounts its own config directory over. No shell, no CA certificates
 * (the registry here serves; it proxies nothing). Config: Cmd ["/bin/registry", "serve",
 * "/etc/docker/registry/config.yml"] (the official image's entrypoint.sh ends in that; ctr's explicit
 * arguments replace it anyway).
 *
 * Names: the docker archive carries the repo tag `registry:2.8.2` (containerd imports it as
 * docker.io/library/registry:2.8.2); the OCI archive the ref name `2.8.2` in index.json (skopeo's
 * `oci-archive:FILE:2.8.2`; `ctr images import` prefixes it with its --base-name, default `import-DATE`).
 * The same rootfs gives the same bytes, so the same digests.
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { Lab } from "../lab/lab";
import { dockerArchive, ImageArchive, ImageFiles, ociArchive } from "./ociImage";

const run = promisify(execFile);

export type RegistryImageFormat = "docker-archive" | "oci-archive";

export interface RegistryImage extends ImageArchive {
    format: RegistryImageFormat;
    /** docker-archive: the repo tag (`registry:2.8.2`); oci-archive: the ref name in index.json (`2.8.2`). */
    name: string;
}

/** Where Debian's registry package puts its binary, and where distribution's image has it. */
const DEBIAN_BINARY = "/usr/bin/docker-registry";
const IMAGE_BINARY = "/bin/registry";
export const REGISTRY_VERSION = "2.8.2";

/** distribution v2.8.2 cmd/registry/config-example.yml, the official image's /etc/docker/registry/config.yml. */
const OFFICIAL_CONFIG = `version: 0.1
log:
  fields:
    service: registry
storage:
  cache:
    blobdescriptor: inmemory
  filesystem:
    rootdirectory: /var/lib/registry
http:
  addr: :5000
  headers:
    X-Content-Type-Options: [nosniff]
health:
  storagedriver:
    enabled: true
    interval: 10s
    threshold: 3
`;

/** Writes the registry image tar to `file` in `format`. */
export async function registryImage(file: string, format: RegistryImageFormat, options: { rootfs?: string } = {}): Promise<RegistryImage> {
    const rootfs = options.rootfs ?? (await Lab.rootfs());
    const [binary, ...objects] = await resolveInRootfs(rootfs, DEBIAN_BINARY);
    const files: ImageFiles = {
        [IMAGE_BINARY]: readFromRootfs(rootfs, binary[1]),
        "/etc/passwd": "root:x:0:0:root:/root:/bin/sh\n",
        "/etc/group": "root:x:0:\n",
        "/etc/docker/registry/config.yml": OFFICIAL_CONFIG,
    };
    for (const [wanted, real] of objects) files[wanted] = readFromRootfs(rootfs, real);
    const cmd = [IMAGE_BINARY, "serve", "/etc/docker/registry/config.yml"];
    if (format === "docker-archive") {
        const name = `registry:${REGISTRY_VERSION}`;
        return { ...dockerArchive(file, { repoTag: name, files, cmd }), format, name };
    }
    if (format === "oci-archive") {
        const name = REGISTRY_VERSION;
        return { ...ociArchive(file, { refName: name, files, cmd }), format, name };
    }
    throw new Error(`unknown image format ${JSON.stringify(format)}`);
}

/**
 * `binary`, then the shared objects `ldd` (run inside the rootfs) names for it, each as [the path it is looked
 * for at, the same file with the rootfs's symlinks resolved inside the rootfs]. Only the binary for a static
 * one ("not a dynamic executable").
 */
async function resolveInRootfs(rootfs: string, binary: string): Promise<[string, string][]> {
    // ldd's lines: "NAME => PATH (ADDR)", "PATH (ADDR)" for the loader, "linux-vdso.so.1 (ADDR)" (the kernel's).
    const script = `
        printf '%s %s\\n' "$1" "$(readlink -e "$1")"
        out="$(ldd "$1" 2>&1)" || { case "$out" in *"not a dynamic executable"*) exit 0 ;; esac; echo "$out" >&2; exit 1; }
        case "$out" in *"not found"*) echo "$out" >&2; exit 1 ;; esac
        printf '%s\\n' "$out" | sed -n -e 's/^[[:space:]]*[^[:space:]]* => \\(\\/[^[:space:]]*\\) (.*$/\\1/p' -e 's/^[[:space:]]*\\(\\/[^[:space:]]*\\) (.*$/\\1/p' |
            while read -r lib; do printf '%s %s\\n' "$lib" "$(readlink -e "$lib")"; done`;
    const { stdout } = await run("chroot", [rootfs, "/bin/sh", "-c", script, "sh", binary]);
    const pairs = stdout
        .split("\n")
        .filter(Boolean)
        .map((line) => line.split(" ") as [string, string]);
    if (pairs.some(([wanted, real]) => !wanted.startsWith("/") || !real?.startsWith("/"))) throw new Error(`unexpected ldd output for ${binary}:\n${stdout}`);
    return pairs;
}

/** A regular file of the rootfs (no symlink on its path: resolved inside the rootfs beforehand), with its mode. */
function readFromRootfs(rootfs: string, file: string): { content: Buffer; mode: number } {
    const full = path.join(rootfs, file);
    const stat = fs.lstatSync(full);
    if (!stat.isFile()) throw new Error(`${file} in ${rootfs} is not a regular file`);
    return { content: fs.readFileSync(full), mode: stat.mode & 0o7777 };
}
