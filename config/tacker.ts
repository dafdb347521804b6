/**
 * Converts a Tacker InstantiateVnfRequest (as in Tacker's user guide and specs) into this project's stack
 * config, and validates the result with the same model the program uses. Problems are reported with the
 * request's own field paths.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { z } from "zod";
import { cidr, endpoint, hostOrIp, identifier, ipAddress, packagePath, port, proxyUrl, remotePath, secretText, username } from "./fields";
import { findSecrets, LoadedVnf, parseConvertedConfig, SecretLocation, zodProblems } from "./load";
import { FLAVOUR_DEFAULTS } from "./resolve";
import { ConfigError, ConfigProblem } from "./spec";
import { fillIndices, isPlaceholder, setAt, TACKER_FIELDS, tackerPathOf, valuesAt } from "./tackerMap";
import { CnfConvertOptions, convertCnfInstantiateRequest, isCnfInstantiateRequest } from "./tackerCnf";

const K = "additionalParams.k8s_cluster_installation_param";
const R = "additionalParams.private_registry_installation_param";

const text = z.string();
const cpName = z.string().min(1, "must name a connection point");
const numberOrDigits = z.union([z.number(), z.string().regex(/^\d+$/, "must be a number")]);
/** Package paths as Tacker writes them (`./Scripts/x.sh` or `Files/x`), held to the model's rules. */
const tackerPackagePath = z.string().transform((v) => v.replace(/^(\.\/)+/, "")).pipe(packagePath);
/** Tacker's samples leave "" or 0.0.0.0 where nothing was chosen. */
const orPlaceholder = <T extends z.ZodType>(schema: T) => z.union([z.literal(""), schema]);

const tackerNode = {
    aspect_id: identifier.optional(),
    ssh_cp_name: cpName,
    nic_cp_name: cpName.optional(),
    username,
    password: secretText,
};

const TackerClusterParams = z
    .object({
        script_path: text.optional(),
        helm_installation_script_path: text.optional(),
        vim_name: text.optional(),
        master_node: z
            .object({
                ...tackerNode,
                pod_cidr: cidr.optional(),
                cluster_cidr: cidr.optional(),
                cluster_cp_name: cpName,
                cluster_fip_name: text.optional(),
            })
            .strict(),
        worker_node: z.object(tackerNode).strict(),
        proxy: z.object({ http_proxy: proxyUrl.optional(), https_proxy: proxyUrl.optional(), no_proxy: text.optional(), k8s_node_cidr: cidr.optional() }).strict().optional(),
        storage_server: z
            .object({
                ssh_cp_name: cpName,
                nic_cp_name: cpName.optional(),
                username,
                password: secretText,
                cinder_volume_setup_params: z.array(z.object({ volume_resource_id: identifier, mount_to: remotePath }).strict()).min(1),
                nfs_server_setup_params: z.array(z.object({ export_dir: remotePath, export_to: cidr }).strict()).min(1),
            })
            .strict()
            .optional(),
        pv_registration_params: z.array(z.object({ pv_manifest_file_path: tackerPackagePath, nfs_server_cp: cpName }).strict()).optional(),
        private_registry_connection_info: z
            .array(
                z
                    .object({
                        connection_type: z.union([z.literal("0"), z.literal("1"), z.literal(0), z.literal(1)], { error: "must be 0 (HTTP) or 1 (HTTPS)" }),
                        server: endpoint,
                        username: username.optional(),
                        password: secretText.optional(),
                        certificate_path: tackerPackagePath.optional(),
                        hosts_string: z
                            .string()
                            .refine((v) => {
                                const [ip, host, ...rest] = v.trim().split(/\s+/);
                                return rest.length === 0 && ipAddress.safeParse(ip).success && hostOrIp.safeParse(host ?? "").success;
                            }, 'must be "<IP address> <FQDN>"')
                            .optional(),
                        mirror_of: z.array(endpoint).optional(),
                    })
                    .strict(),
            )
            .optional(),
        ansible: z
            .object({
                ip_address: orPlaceholder(hostOrIp),
                username,
                password: secretText,
                kubespray_root_path: orPlaceholder(remotePath),
                transferring_inventory_path: orPlaceholder(remotePath),
            })
            .strict()
            .optional(),
        external_lb_param: z.object({ ssh_cp_name: cpName, ssh_username: username, ssh_password: secretText, script_path: text.optional() }).strict().optional(),
    })
    .strict();

const TackerRegistryParams = z
    .object({
        ssh_cp_name: cpName,
        ssh_username: username,
        ssh_password: secretText,
        image_path: tackerPackagePath.optional(),
        port_no: numberOrDigits.pipe(z.coerce.number()).pipe(port).optional(),
    })
    .strict();

const IpAddressData = z.object({ type: text.optional(), fixedAddresses: z.array(text).optional(), numDynamicAddresses: z.number().optional(), subnetId: text.optional() });
const ExtCp = z.object({
    cpdId: cpName,
    cpConfig: z.array(z.object({ cpProtocolData: z.array(z.object({ layerProtocol: text, ipOverEthernet: z.object({ ipAddresses: z.array(IpAddressData).optional() }).optional() })).optional() })).optional(),
});

/** SOL003 InstantiateVnfRequest, as far as this project reads it; other SOL003 fields are accepted and ignored. */
const InstantiateRequest = z
    .object({
        flavourId: text,
        instantiationLevelId: text.optional(),
        extVirtualLinks: z.array(z.object({ id: text.optional(), resourceId: text.min(1, "must be a network ID"), extCps: z.array(ExtCp) })).optional(),
        extManagedVirtualLinks: z.array(z.unknown()).optional(),
        vimConnectionInfo: z.array(z.object({ id: text.optional(), vimId: text.optional(), vimType: text, interfaceInfo: z.record(z.string(), z.unknown()).optional(), accessInfo: z.record(z.string(), z.unknown()).optional(), extra: z.unknown().optional() })).optional(),
        localizationLanguage: text.optional(),
        additionalParams: z
            .object({
                k8s_cluster_installation_param: TackerClusterParams.optional(),
                private_registry_installation_param: TackerRegistryParams.optional(),
            })
            .catchall(z.unknown()),
    })
    .strict();

type InstantiateRequest = z.infer<typeof InstantiateRequest>;

export interface ConvertOptions {
    /** Stack config to start from (an existing stack's non-secret values): image, flavor, counts… */
    base?: Record<string, unknown>;
    /** VNF package folder the request's file paths are relative to; files are checked when it is given. */
    packageDir?: string;
    /** Folder relative paths are resolved against (the project directory). */
    baseDir: string;
    stackName: string;
}

export interface ConversionResult {
    /** The stack config (keys without `k8s-vnf:`), secrets included. */
    config: Record<string, unknown>;
    /** Where the secrets are: set these with `pulumi config set --secret`. */
    secrets: SecretLocation[];
    /** Tacker parameters accepted and not used, with the reason. */
    ignored: ConfigProblem[];
    /** Values the request did not carry, taken from Tacker's sample VNFD. */
    defaulted: ConfigProblem[];
    warnings: ConfigProblem[];
    /** The validated model, as the program will see it. */
    loaded: LoadedVnf;
}

/** Tacker's sample VNFD/HOT values for what a request never carries. */
const VNFD_DEFAULTS = {
    image: "ubuntu-20.04-server-cloudimg-amd64",
    flavor: "m1.medium",
    workers: { count: 2, minCount: 2, maxCount: 4 },
};

const OPENSTACK_VIM_TYPES = new Set(["openstack", "ETSINFV.OPENSTACK_KEYSTONE.V_2", "ETSINFV.OPENSTACK_KEYSTONE.V_3"]);

export function convertInstantiateRequest(body: unknown, options: ConvertOptions | CnfConvertOptions): ConversionResult {
    const source = "InstantiateVnfRequest";
    const parsed = InstantiateRequest.safeParse(body);
    if (!parsed.success) throw new ConfigError(zodProblems(parsed.error), source);
    const req = parsed.data;
    if (isCnfInstantiateRequest(req)) {
        if (!("vim" in options)) {
            throw new ConfigError([{ path: "vimConnectionInfo", message: "this is a CNF for a Kubernetes VIM: convert it through the LCM service, which holds the VIM's credentials, or write the `cnf` stack config (docs/configuration.md)" }], source);
        }
        return convertCnfInstantiateRequest(req, options);
    }
    const problems: ConfigProblem[] = [];
    const warnings: ConfigProblem[] = [];
    const ignored: ConfigProblem[] = [];
    const defaulted: ConfigProblem[] = [];

    const cluster = req.additionalParams.k8s_cluster_installation_param;
    const registry = req.additionalParams.private_registry_installation_param;
    if (!cluster === !registry) {
        problems.push({
            path: "additionalParams",
            message: cluster
                ? "has both k8s_cluster_installation_param and private_registry_installation_param; a VNF is one or the other"
                : "needs k8s_cluster_installation_param (a Kubernetes cluster) or private_registry_installation_param (a registry VNF)",
        });
        throw new ConfigError(problems, source);
    }

    const config: Record<string, unknown> = structuredClone(options.base ?? {});
    const set = (path: string, value: unknown): void => setAt(config, path, [], value);
    const setDefault = (path: string, value: unknown, why: string): void => {
        if (valuesAt(config, path).length) return;
        set(path, value);
        defaulted.push({ path, message: `${JSON.stringify(value)} (${why})` });
    };

    for (const m of TACKER_FIELDS) {
        for (const { indices, value } of valuesAt(req, m.tacker)) {
            const concrete = fillIndices(m.tacker, indices);
            if (m.ignored) ignored.push({ path: concrete, message: m.note ?? "not used by this project" });
            else if (m.config) {
                const converted = m.convert ? m.convert(value) : value;
                if (converted !== undefined) setAt(config, m.config, indices, converted);
            }
        }
    }
    for (const key of Object.keys(req.additionalParams)) {
        if (!TACKER_FIELDS.some((m) => m.tacker === `additionalParams.${key}` || m.tacker.startsWith(`additionalParams.${key}.`))) {
            ignored.push({ path: `additionalParams.${key}`, message: "not a parameter of this project" });
        }
    }

    const vim = (req.vimConnectionInfo ?? []).find((v) => OPENSTACK_VIM_TYPES.has(v.vimType));
    (req.vimConnectionInfo ?? []).forEach((v, i) => {
        if (!OPENSTACK_VIM_TYPES.has(v.vimType)) {
            problems.push({ path: `vimConnectionInfo[${i}].vimType`, message: `${v.vimType} is not an OpenStack VIM; k8s-vnf deploys VNFs on OpenStack` });
        }
    });
    if (vim) set("tacker", { ...(config.tacker as object), vimConnectionId: vim.id, vimId: vim.vimId });

    const networks = new NetworkLookup(req);
    const place = (group: string, cpField: string, cps: (string | undefined)[]): string | undefined => {
        const found = networks.find(cps);
        if (found) {
            if (!valuesAt(config, `${group}.networkId`).length) set(`${group}.networkId`, found.networkId);
            if (found.subnetId && !valuesAt(config, `${group}.subnetId`).length) set(`${group}.subnetId`, found.subnetId);
            if (found.fixedIps.length && !valuesAt(config, `${group}.fixedIps`).length) set(`${group}.fixedIps`, found.fixedIps);
            return found.cpdId;
        }
        if (!valuesAt(config, `${group}.networkId`).length && !valuesAt(config, "network.networkId").length) {
            problems.push({ path: cpField, message: `connection point ${cps.find(Boolean)} is in no extVirtualLinks[].extCps[].cpdId, so its network is unknown` });
        }
        return undefined;
    };

    if (cluster) {
        set("vnfKind", "cluster");
        const flavour = req.flavourId as keyof typeof FLAVOUR_DEFAULTS;
        if (!(flavour in FLAVOUR_DEFAULTS)) {
            problems.push({ path: "flavourId", message: `${req.flavourId} is not a flavour of the Kubernetes cluster VNF (simple, complex, podaffinity)` });
        } else {
            setDefault("masters.count", FLAVOUR_DEFAULTS[flavour].masters, `flavour ${flavour} in Tacker's sample VNFD`);
        }
        for (const [k, v] of Object.entries(VNFD_DEFAULTS.workers)) setDefault(`workers.${k}`, v, "Tacker's sample VNFD");

        for (const [node, group] of [["master_node", "masters"], ["worker_node", "workers"]] as const) {
            const n = cluster[node];
            const cp = place(group, `${K}.${node}.nic_cp_name`, [n.nic_cp_name, n.ssh_cp_name]);
            if (cp) set(`${group}.connectionPoint`, cp);
            if (n.nic_cp_name && n.ssh_cp_name !== n.nic_cp_name) {
                warnings.push({ path: `${K}.${node}.ssh_cp_name`, message: `differs from nic_cp_name; nodes are reached on ${n.nic_cp_name} (set ${group}.floatingIpPool to go through a floating IP)` });
            }
        }
        const master = cluster.master_node;
        if (master.cluster_cp_name === (master.nic_cp_name ?? master.ssh_cp_name)) {
            delete (config.controlPlane as Record<string, unknown> | undefined)?.vipConnectionPoint;
            if (config.controlPlane && Object.keys(config.controlPlane).length === 0) delete config.controlPlane;
            if (flavour !== "simple" && flavour in FLAVOUR_DEFAULTS) {
                problems.push({ path: `${K}.master_node.cluster_cp_name`, message: `flavour ${flavour} is HA: name the VIP port (e.g. vip_CP), not a master's own port` });
            }
        } else if (flavour === "simple") {
            problems.push({ path: `${K}.master_node.cluster_cp_name`, message: `${master.cluster_cp_name} names a VIP port, but flavour simple has a single master (use nic_cp_name, or flavour complex)` });
        }

        if (cluster.storage_server) {
            const s = cluster.storage_server;
            const cp = place("storageServer", `${K}.storage_server.ssh_cp_name`, [s.ssh_cp_name]);
            if (cp) set("storageServer.connectionPoint", cp);
            (cluster.pv_registration_params ?? []).forEach((pv, i) => {
                if (pv.nfs_server_cp !== s.ssh_cp_name) {
                    problems.push({ path: `${K}.pv_registration_params[${i}].nfs_server_cp`, message: `${pv.nfs_server_cp} is not the storage server's connection point (${s.ssh_cp_name})` });
                }
            });
        }
        if (cluster.external_lb_param) {
            const cp = place("externalLoadBalancer", `${K}.external_lb_param.ssh_cp_name`, [cluster.external_lb_param.ssh_cp_name, "externalLB_CP1"]);
            if (cp) set("externalLoadBalancer.connectionPoint", cp);
            if (cp && cp !== cluster.external_lb_param.ssh_cp_name) {
                warnings.push({ path: `${K}.external_lb_param.ssh_cp_name`, message: `${cluster.external_lb_param.ssh_cp_name} is in no extVirtualLinks; using ${cp}'s network for the outside port` });
            }
        }
        if (cluster.ansible && isPlaceholder(cluster.ansible.ip_address)) {
            warnings.push({ path: `${K}.ansible.ip_address`, message: "no Ansible server given: the stack creates one (kubespray.server)" });
        }
        if (cluster.ansible && options.packageDir !== undefined) {
            const release = packagedKubesprayRelease(path.resolve(options.baseDir, options.packageDir));
            if (release && "problem" in release) problems.push({ path: `${K}.ansible`, message: release.problem });
            else if (release) {
                set("kubespray.version", release.version);
                set("kubespray.releaseFile", release.file);
            }
        }
    } else if (registry) {
        set("vnfKind", "registry");
        if (req.flavourId !== "simple") problems.push({ path: "flavourId", message: `${req.flavourId} is not a flavour of the registry VNF (simple)` });
        const cp = place("registry", `${R}.ssh_cp_name`, [registry.ssh_cp_name]);
        if (cp) set("registry.connectionPoint", cp);
    }

    if (registry) delete config.flavour;
    setDefault("image", VNFD_DEFAULTS.image, "image of Tacker's sample VNF package");
    setDefault("flavor", VNFD_DEFAULTS.flavor, "flavor of Tacker's sample VNFD");
    if (options.packageDir !== undefined) set("packageDir", options.packageDir);

    if (problems.length) throw new ConfigError(problems, source);
    const loaded = parseConvertedConfig(config, { stackName: options.stackName, baseDir: options.baseDir, requirePackageFiles: options.packageDir !== undefined }, source, toTackerPath);
    warnings.push(...loaded.warnings.map(toTackerPath));
    writeNormalizedCidrs(config, loaded);
    return { config, secrets: findSecrets(config), ignored, defaulted, warnings, loaded };
}

/** Writes the CIDRs the model uses (host bits cleared), so the stack does not warn on every run. */
function writeNormalizedCidrs(config: Record<string, unknown>, loaded: LoadedVnf): void {
    const spec = loaded.spec;
    if (spec.kind !== "cluster") return;
    setAt(config, "kubernetes.podCidr", [], spec.kubernetes.podCidr);
    setAt(config, "kubernetes.serviceCidr", [], spec.kubernetes.serviceCidr);
    if (spec.proxy?.k8sNodeCidr) setAt(config, "proxy.k8sNodeCidr", [], spec.proxy.k8sNodeCidr);
    spec.storageServer?.exports.forEach((e, i) => setAt(config, "storageServer.exports[].exportTo", [i], e.exportTo));
}

/** Names a problem by the request field it came from; fields the request did not carry keep their config path. */
function toTackerPath(p: ConfigProblem): ConfigProblem {
    const tacker = tackerPathOf(p.path);
    return tacker ? { path: tacker, message: p.message } : { path: `${p.path} (stack config)`, message: p.message };
}

interface FoundNetwork {
    cpdId: string;
    networkId: string;
    subnetId?: string;
    fixedIps: string[];
}

/** Finds a connection point's network (and fixed addresses) in `extVirtualLinks`. */
class NetworkLookup {
    constructor(private readonly req: InstantiateRequest) {}

    find(cpdIds: (string | undefined)[]): FoundNetwork | undefined {
        for (const cpdId of cpdIds) {
            if (!cpdId) continue;
            for (const link of this.req.extVirtualLinks ?? []) {
                const cp = link.extCps.find((c) => c.cpdId === cpdId);
                if (!cp) continue;
                const addresses = (cp.cpConfig ?? []).flatMap((c) => c.cpProtocolData ?? []).flatMap((d) => d.ipOverEthernet?.ipAddresses ?? []);
                return {
                    cpdId,
                    networkId: link.resourceId,
                    subnetId: addresses.find((a) => a.subnetId)?.subnetId,
                    fixedIps: addresses.flatMap((a) => a.fixedAddresses ?? []),
                };
            }
        }
        return undefined;
    }
}

/** Whether a stack config names files of a VNF package (PV manifests, a registry CA, the registry's image, certificate or preloaded images). */
export function namesPackageFiles(config: Record<string, unknown>): boolean {
    const registries = (config.privateRegistries as { caCertificateFile?: string }[] | undefined) ?? [];
    const registry = config.registry as { imageFile?: string; preloadImages?: unknown[]; tls?: { certificateFile?: string; privateKeyFile?: string } } | undefined;
    return (
        !!(config.persistentVolumes as unknown[] | undefined)?.length ||
        registries.some((r) => r.caCertificateFile) ||
        !!(registry?.imageFile || registry?.preloadImages?.length || registry?.tls?.certificateFile || registry?.tls?.privateKeyFile) ||
        !!(config.cnf as { manifests?: unknown[] } | undefined)?.manifests?.length
    );
}

/** Where a VNF package for a site without access to GitHub carries the kubespray release (GitHub's archive name). */
const KUBESPRAY_RELEASE_DIR = "Files/kubespray";

/**
 * The kubespray release a VNF package carries, as `Files/kubespray/kubespray-<version>.tar.gz`: the stack
 * installs that release from the package instead of downloading the default one. Undefined when it has none.
 */
function packagedKubesprayRelease(packageDir: string): { version: string; file: string } | { problem: string } | undefined {
    const dir = path.join(packageDir, KUBESPRAY_RELEASE_DIR);
    const archives = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => /^kubespray-\d+\.\d+\.\d+\.tar\.gz$/.test(f)) : [];
    if (archives.length > 1) return { problem: `the VNF package holds several kubespray releases in ${KUBESPRAY_RELEASE_DIR} (${archives.join(", ")}): keep one` };
    if (!archives.length) return undefined;
    return { version: `v${archives[0].slice("kubespray-".length, -".tar.gz".length)}`, file: `${KUBESPRAY_RELEASE_DIR}/${archives[0]}` };
}
