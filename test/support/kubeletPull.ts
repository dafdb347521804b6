/**
 * A stand-in of the kubelet's image pull on a lab node (no kubelet runs in the lab), calling the node's real
 * containerd through its CRI socket as the kubelet does:
 * - the credentials come from the node's `/var/lib/kubelet/config.json`, looked up by the image's registry
 *   `host[:port]` (the kubelet's root dir is searched first: cmd/kubelet/app/server.go
 *   SetPreferredDockercfgPath; the entry's `auth` is decoded into username and password:
 *   pkg/credentialprovider/config.go DockerConfigEntry.UnmarshalJSON; matched by host and port:
 *   pkg/credentialprovider/keyring.go URLsMatch);
 * - they are sent as the request's AuthConfig, none without an entry (pkg/kubelet/kuberuntime/kuberuntime_image.go
 *   PullImage);
 * - the request is CRI `runtime.v1.ImageService/PullImage` (k8s.io/cri-api runtime/v1 api.proto: PullImageRequest
 *   {ImageSpec image = 1; AuthConfig auth = 2}, ImageSpec {string image = 1}, AuthConfig {string username = 1;
 *   string password = 2}, PullImageResponse {string image_ref = 1}).
 * containerd then resolves the registry through its CRI `config_path` and the hosts.toml the step wrote.
 *
 * Run in the node's mount and network namespaces (`kubeletPull`), where the node's socket and files are; the
 * login never leaves the node's files and the socket, so it is on no command line.
 */
import * as grpc from "@grpc/grpc-js";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { Lab } from "../lab/lab";
import { PROJECT_DIR } from "./program";

/**
 * Pulls `image` on lab host `host` as its kubelet would; resolves to the image ref, or rejects with containerd's
 * error. `withoutLogin`: the request carries no AuthConfig, as kubeadm's preflight pulls and containerd's own of
 * the sandbox image do (cmd/kubeadm/app/util/runtime: PullImage with no auth; containerd CRI ensureImageExists).
 */
export async function kubeletPull(lab: Lab, host: string, image: string, options: { withoutLogin?: boolean } = {}): Promise<string> {
    const dir = lab.host(host).dir;
    const pid = fs.readFileSync(path.join(dir, "sshd.pid"), "utf8").trim();
    const root = path.join(dir, "merged");
    const r = spawnSync("nsenter", ["-t", pid, "-m", "-n", `--wd=${PROJECT_DIR}`, "--", process.execPath, "-r", require.resolve("ts-node/register/transpile-only"), __filename, root, image, options.withoutLogin ? "without-login" : "kubelet"], {
        cwd: PROJECT_DIR,
        encoding: "utf8",
        timeout: 120_000,
    });
    if (r.status !== 0) throw new Error(`kubelet pull of ${image} on ${host}: ${(r.stderr || r.stdout || String(r.error)).trim()}`);
    return r.stdout.trim();
}

/** The login the kubelet would send for `image`, from a Docker config.json's `auths`. */
export function credentialsFor(image: string, configJson: string | undefined): { username: string; password: string } | undefined {
    if (!configJson) return undefined;
    const registry = image.split("/")[0];
    const auths = (JSON.parse(configJson) as { auths?: Record<string, { auth?: string }> }).auths ?? {};
    const entry = Object.entries(auths).find(([key]) => key.replace(/^https?:\/\//, "").replace(/\/.*$/, "") === registry)?.[1];
    if (!entry?.auth) return undefined;
    const decoded = Buffer.from(entry.auth, "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

function varint(n: number): Buffer {
    const bytes: number[] = [];
    while (n > 0x7f) {
        bytes.push((n & 0x7f) | 0x80);
        n >>>= 7;
    }
    bytes.push(n);
    return Buffer.from(bytes);
}

/** A length-delimited protobuf field (strings and embedded messages). */
function field(number: number, value: Buffer | string): Buffer {
    const bytes = Buffer.from(value);
    return Buffer.concat([varint((number << 3) | 2), varint(bytes.length), bytes]);
}

export function pullImageRequest(image: string, auth?: { username: string; password: string }): Buffer {
    const spec = field(1, field(1, image));
    return auth ? Buffer.concat([spec, field(2, Buffer.concat([field(1, auth.username), field(2, auth.password)]))]) : spec;
}

function imageRef(response: Buffer): string {
    // field 1 (tag 0x0a), a varint length, the string.
    if (response.length === 0) return "";
    let length = 0;
    let shift = 0;
    let i = 1;
    for (; i < response.length; i++) {
        length |= (response[i] & 0x7f) << shift;
        shift += 7;
        if (!(response[i] & 0x80)) break;
    }
    return response.subarray(i + 1, i + 1 + length).toString("utf8");
}

async function main(root: string, image: string, login: string): Promise<void> {
    const credentialsFile = path.join(root, "var/lib/kubelet/config.json");
    const auth = login === "kubelet" ? credentialsFor(image, fs.existsSync(credentialsFile) ? fs.readFileSync(credentialsFile, "utf8") : undefined) : undefined;
    // A relative socket path: the absolute one may pass the 108 bytes a Unix socket address holds.
    process.chdir(path.join(root, "run/containerd"));
    const client = new grpc.Client("unix:containerd.sock", grpc.credentials.createInsecure());
    const ref = await new Promise<string>((resolve, reject) =>
        client.makeUnaryRequest(
            "/runtime.v1.ImageService/PullImage",
            (b: Buffer) => b,
            (b: Buffer) => b,
            pullImageRequest(image, auth),
            new grpc.Metadata(),
            { deadline: Date.now() + 100_000 },
            (err, response) => (err ? reject(new Error(err.details || err.message)) : resolve(imageRef(response!))),
        ),
    );
    client.close();
    process.stdout.write(`${ref}\n`);
}

if (require.main === module) {
    main(process.argv[2], process.argv[3], process.argv[4]).catch((e) => {
        process.stderr.write(`${(e as Error).message}\n`);
        process.exit(1);
    });
}
