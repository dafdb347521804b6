import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseRequestText } from "../../config/requestText";
import { PROJECT_DIR } from "./program";

export const REQUESTS_DIR = path.join(PROJECT_DIR, "test/fixtures/requests");
export const EXAMPLE_PACKAGE = path.join(PROJECT_DIR, "examples/package");

/** The InstantiateVnfRequest bodies of the seeds, verbatim (with Tacker's `#` comments). */
export const SEED_INSTANTIATE_BODIES = [
    "simple-instantiate.json",
    "complex-instantiate.json",
    "podaffinity-instantiate.json",
    "storage-instantiate.json",
    "registry-vnf-instantiate.json",
    "registry-connection-instantiate.json",
    "kubespray-instantiate.json",
];

export function requestText(file: string): string {
    return fs.readFileSync(path.join(REQUESTS_DIR, file), "utf8");
}

export function request(file: string): any {
    return parseRequestText(requestText(file), file);
}

/**
 * A VNF package folder holding what the seeds' requests refer to: the example package's manifests and CA,
 * plus a registry image archive (a real tar: the header magic is what the check reads).
 */
export function makePackageDir(): { dir: string; cleanup: () => void } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-package-"));
    fs.cpSync(EXAMPLE_PACKAGE, dir, { recursive: true });
    fs.mkdirSync(path.join(dir, "Files/images"), { recursive: true });
    const header = Buffer.alloc(512);
    header.write("manifest.json", 0);
    header.write("ustar", 257);
    fs.writeFileSync(path.join(dir, "Files/images/private_registry.tar"), Buffer.concat([header, Buffer.alloc(1024)]));
    return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** The storage request with recognisable secrets (two passwords, a proxy's), as the CLI tests import it. */
export function requestWithSecrets(): string {
    return fs
        .readFileSync(path.join(REQUESTS_DIR, "storage-instantiate.json"), "utf8")
        .replace(/"password": "ubuntu"/, '"password": "master-Secret-1"')
        .replace(/"password": "ubuntu"/, '"password": "worker-Secret-2"')
        .replace("password1@", "proxySecret3@");
}

/** Any of requestWithSecrets()'s secrets. */
export const REQUEST_SECRETS = /master-Secret-1|worker-Secret-2|proxySecret3/;
