/** The private registry VNF (vnfKind registry): its VM, port, volume, TLS, logins and preloaded images. */
import * as path from "node:path";
import { Checker } from "./checker";
import { ImageArchiveFormat, imageArchiveFormat } from "./imageArchive";
import { CA_CERTIFICATE, IMAGE_ARCHIVE, PackageFileKind, PackageFiles, PRIVATE_KEY } from "./packageFiles";
import { resolveSecurityGroup, resolveServer } from "./resolveServer";
import { StackConfig } from "./schema";
import { RegistrySpec } from "./spec";

export function resolveRegistry(config: StackConfig, name: string, files: PackageFiles, c: Checker): RegistrySpec {
    if (config.cnf) c.fail("cnf", "only for vnfKind: cnf");
    if (config.tenants.length) c.fail("tenants", "only for vnfKind: cluster");
    const clusterOnly = ["storageServer", "kubespray", "externalLoadBalancer", "podAffinity", "proxy"] as const;
    for (const key of clusterOnly) if (config[key]) c.fail(key, "only for vnfKind: cluster");
    if (config.persistentVolumes.length) c.fail("persistentVolumes", "only for vnfKind: cluster");
    if (config.privateRegistries.length) c.fail("privateRegistries", "only for vnfKind: cluster");
    if (config.flavourChange) c.fail("flavourChange", "only for vnfKind: cluster");
    if (config.operate.drained) c.fail("operate.drained", "a registry VNF has no Kubernetes nodes to drain; stop it with operate.vnfState");
    const r = config.registry;
    if (!r) {
        c.fail("registry", "vnfKind registry needs the `registry` settings");
        return undefined as unknown as RegistrySpec;
    }
    const securityGroup = resolveSecurityGroup(config, c);
    for (const key of Object.keys(config.heal.nodes)) if (key !== "registry") c.fail(`heal.nodes.${key}`, "a registry VNF heals its one VM: heal.nodes.registry");
    const seenUsers = new Map<string, number>();
    r.users.forEach((u, i) => {
        if (seenUsers.has(u.username)) c.fail(`registry.users[${i}].username`, `duplicates registry.users[${seenUsers.get(u.username)}].username`);
        seenUsers.set(u.username, i);
    });
    return {
        kind: "registry",
        name,
        server: resolveServer(config, "registry", r, c, config.ssh.privateKey !== undefined),
        connectionPoint: r.connectionPoint,
        port: r.port,
        imageFile: r.imageFile && imageArchive(files, "registry.imageFile", r.imageFile, c)?.file,
        volume: r.volume,
        tls: r.tls && resolveTls(r.tls, files, c),
        users: r.users,
        preloadImages: r.preloadImages.flatMap((p, i) => {
            const archive = imageArchive(files, `registry.preloadImages[${i}].file`, p.file, c);
            return archive ? [{ ...archive, image: p.image }] : [];
        }),
        healGeneration: config.heal.generation + (config.heal.nodes.registry ?? 0),
        securityGroup,
        ssh: config.ssh,
        tacker: config.tacker,
        operate: config.operate,
    };
}

/** An image tarball of the package and its format (see imageArchive.ts); undefined after a reported problem. */
function imageArchive(files: PackageFiles, field: string, relative: string, c: Checker): { file: string; format: ImageArchiveFormat } | undefined {
    const before = c.problems.length;
    const file = files.check(field, relative, IMAGE_ARCHIVE);
    if (c.problems.length > before || !path.isAbsolute(file)) return undefined;
    const found = imageArchiveFormat(file);
    if ("problem" in found) {
        c.fail(field, `${relative} ${found.problem}`);
        return undefined;
    }
    return { file, format: found.format };
}

/** The registry's certificate and key, each from the package or given in config (exactly one way each). */
function resolveTls(tls: NonNullable<NonNullable<StackConfig["registry"]>["tls"]>, files: PackageFiles, c: Checker): RegistrySpec["tls"] {
    const one = (name: "certificate" | "privateKey", kind: PackageFileKind): string | undefined => {
        const field = `registry.tls.${name}`;
        const file = tls[`${name}File`];
        const given = tls[name];
        if ((file === undefined) === (given === undefined)) {
            c.fail(file === undefined ? field : `${field}File`, `give the ${name === "certificate" ? "certificate" : "private key"} once: ${name} (PEM) or ${name}File (in the package)`);
            return undefined;
        }
        if (given !== undefined) {
            const problem = kind.check(given);
            if (problem) c.fail(field, problem);
            return given;
        }
        return files.read(`${field}File`, file!, kind).text;
    };
    const certificate = one("certificate", CA_CERTIFICATE);
    const privateKey = one("privateKey", PRIVATE_KEY);
    return certificate !== undefined && privateKey !== undefined ? { certificate, privateKey } : undefined;
}

export function caCertificate(file: { path: string; text?: string }): { caCertificateFile: string; caCertificate?: string } {
    return { caCertificateFile: file.path, ...(file.text !== undefined ? { caCertificate: file.text } : {}) };
}
