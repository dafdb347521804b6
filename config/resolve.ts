/**
 * Relations between fields, flavour defaults and fallbacks: turns a shape-checked {@link StackConfig} into a
 * {@link VnfSpec}, or reports every problem it finds with its field path.
 */
import { kubesprayRelease } from "./kubesprayReleases";
import { checkKubespray } from "./kubesprayConfig";
import { isIP } from "node:net";
import * as YAML from "yaml";
import { isNoProxyEntry, kubeadmVersionProblem } from "./fields";
import { overlaps } from "./net";
import { Checker } from "./checker";
import { caCertificate, resolveRegistry } from "./resolveRegistry";
import { noLogin, resolveSecurityGroup, resolveServer } from "./resolveServer";
import { DEFAULT_KUBERNETES_VERSION, StackConfig } from "./schema";
import {
    ClusterSpec, CnfSpec, ConfigProblem, NodeGroupSpec, NodeRole, TenantSpec, VnfSpec,
} from "./spec";
import { planCnfObjects } from "./cnfManifests";
import { CA_CERTIFICATE, checkPemCertificate, KUBERNETES_MANIFEST, KUBESPRAY_RELEASE, PackageFiles, PV_MANIFEST } from "./packageFiles";

export interface ResolveOptions {
    /** Used for VM names when `vnfName` is not set. */
    stackName: string;
    /** Folder `packageDir` is relative to (the project directory). */
    baseDir: string;
    /**
     * Whether files named by the configuration must be present. The program needs them; the request
     * converter checks them only when it was given the package directory.
     */
    requirePackageFiles?: boolean;
}

export interface ResolveResult {
    spec?: VnfSpec;
    problems: ConfigProblem[];
    warnings: ConfigProblem[];
}

/** Tacker's sample VNFD values, used where the configuration is silent. */
export const FLAVOUR_DEFAULTS = {
    simple: { masters: 1, workers: 2 },
    complex: { masters: 3, workers: 2 },
    podaffinity: { masters: 3, workers: 2 },
} as const;

const WORKER_RANGE_DEFAULT = { min: 1, max: 10 };

export function sanitizeName(stackName: string): string {
    const cleaned = stackName.toLowerCase().replace(/[^a-z0-9-]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 40).replace(/-+$/, "");
    return cleaned || "vnf";
}

export function resolveVnf(config: StackConfig, options: ResolveOptions): ResolveResult {
    const c = new Checker();
    const name = config.vnfName ?? sanitizeName(options.stackName);
    const files = new PackageFiles(config.packageDir, options.baseDir, c, options.requirePackageFiles ?? true);
    const resolvers = { cluster: resolveCluster, registry: resolveRegistry, cnf: resolveCnf };
    const spec = resolvers[config.vnfKind](config, name, files, c, options);
    return c.problems.length ? { problems: c.problems, warnings: c.warnings } : { spec, problems: [], warnings: c.warnings };
}

function resolveCluster(config: StackConfig, name: string, files: PackageFiles, c: Checker): ClusterSpec {
    if (config.registry) c.fail("registry", "only for vnfKind: registry");
    if (config.cnf) c.fail("cnf", "only for vnfKind: cnf");
    const sshKey = config.ssh.privateKey !== undefined;
    const flavour = config.flavour;
    const defaults = FLAVOUR_DEFAULTS[flavour];

    const masterCount = config.masters.count ?? defaults.masters;
    if (flavour === "simple" && masterCount !== 1) {
        c.fail("masters.count", `flavour simple has exactly 1 master (got ${masterCount}); use flavour complex for HA`);
    } else if (flavour !== "simple" && (masterCount < 3 || masterCount % 2 === 0)) {
        c.fail("masters.count", `flavour ${flavour} needs an odd number of masters, at least 3 (got ${masterCount})`);
    }
    const ha = masterCount > 1;

    const workerCount = config.workers.count ?? defaults.workers;
    const minCount = config.workers.minCount ?? Math.min(workerCount, WORKER_RANGE_DEFAULT.min);
    const maxCount = config.workers.maxCount ?? Math.max(workerCount, WORKER_RANGE_DEFAULT.max);
    if (minCount > workerCount) c.fail("workers.minCount", `is ${minCount}, above workers.count ${workerCount}`);
    if (maxCount < workerCount) c.fail("workers.maxCount", `is ${maxCount}, below workers.count ${workerCount}`);

    const group = (role: NodeRole, field: "masters" | "workers", count: number, min: number, max: number): NodeGroupSpec => {
        const g = config[field];
        const fixedIps = g.fixedIps ?? [];
        if (fixedIps.length && fixedIps.length < count) {
            c.fail(`${field}.fixedIps`, `has ${fixedIps.length} address(es) for ${count} ${field}; give one per VM`);
        }
        const server = resolveServer(config, field, g, c, sshKey, false);
        return {
            role, count, minCount: min, maxCount: max, fixedIps,
            aspectId: g.aspectId ?? `${role}_instance`,
            connectionPoint: g.connectionPoint ?? (role === "master" ? "masterNode_CP1" : "workerNode_CP2"),
            vduId: g.vduId ?? `${role}Node`,
            server,
            portMove: "portMove" in g ? resolvePortMove(g.portMove, count, c) : undefined,
        };
    };
    const masters = group("master", "masters", masterCount, masterCount, masterCount);
    const workers = group("worker", "workers", workerCount, minCount, maxCount);

    const podCidr = c.network("kubernetes.podCidr", config.kubernetes.podCidr);
    const serviceCidr = c.network("kubernetes.serviceCidr", config.kubernetes.serviceCidr);
    if (overlaps(podCidr, serviceCidr)) {
        c.fail("kubernetes.serviceCidr", `${serviceCidr.text} overlaps the pod CIDR ${podCidr.text}`);
    }

    let proxy: ClusterSpec["proxy"];
    if (config.proxy) {
        const nodeCidr = config.proxy.k8sNodeCidr ? c.network("proxy.k8sNodeCidr", config.proxy.k8sNodeCidr) : undefined;
        for (const [label, n] of [["pod", podCidr], ["service", serviceCidr]] as const) {
            if (nodeCidr && overlaps(nodeCidr, n)) c.fail("proxy.k8sNodeCidr", `${nodeCidr.text} overlaps the ${label} CIDR ${n.text}`);
        }
        config.proxy.noProxy.forEach((entry, i) => {
            if (!isNoProxyEntry(entry)) c.fail(`proxy.noProxy[${i}]`, "must be an IP, a CIDR, a hostname or a .domain suffix");
        });
        proxy = { ...config.proxy, k8sNodeCidr: nodeCidr?.text };
    }

    for (const key of Object.keys(config.heal.nodes)) {
        if (key === "registry") {
            c.fail("heal.nodes.registry", "only for vnfKind: registry");
            continue;
        }
        if (key === "storage") {
            if (!config.storageServer) c.fail("heal.nodes.storage", "this cluster has no storageServer");
            continue;
        }
        const [role, index] = key.split("-");
        const group = role === "master" ? masters : workers;
        if (Number(index) >= group.count) c.fail(`heal.nodes.${key}`, `there is no ${key}: ${group.count} ${role}(s), numbered from 0`);
        else if (role === "master" && !ha) {
            c.fail(`heal.nodes.${key}`, "a single-master cluster cannot heal its master node by node (the only etcd member goes with it); raise heal.generation to rebuild the entire cluster");
        }
    }

    if (config.controlPlane.vip && !ha) c.fail("controlPlane.vip", "a VIP needs HA (3 or more masters)");
    if (config.controlPlane.vip && !masters.server.subnetId) c.fail("controlPlane.vip", "a fixed VIP needs masters.subnetId (or network.subnetId)");
    if (config.controlPlane.vip && config.kubespray) c.fail("controlPlane.vip", "a kubespray cluster's API is behind externalLoadBalancer, not a VIP on the masters");

    const change = config.flavourChange;
    if (change) {
        if (flavour === "simple" || change.from === flavour) c.fail("flavourChange.from", `a flavour change runs between complex and podaffinity, not from ${change.from} to ${flavour}`);
        change.moved.forEach((key, i) => {
            const [role, index] = key.split("-");
            const count = role === "master" ? masters.count : workers.count;
            if (Number(index) >= count) c.fail(`flavourChange.moved[${i}]`, `there is no ${key}: ${count} ${role}(s), numbered from 0`);
        });
        if (change.fromServerGroupPolicy && change.from !== "podaffinity") c.fail("flavourChange.fromServerGroupPolicy", "only when changing from podaffinity");
    }
    // The server groups exist while any node is in one: the flavour's, or, while a change away from
    // podaffinity is under way, the one its nodes not yet moved are still in.
    let serverGroupPolicy: ClusterSpec["serverGroupPolicy"];
    if (flavour === "podaffinity") serverGroupPolicy = config.podAffinity?.serverGroupPolicy ?? "anti-affinity";
    else if (change?.from === "podaffinity") serverGroupPolicy = change.fromServerGroupPolicy ?? "anti-affinity";
    if (config.podAffinity && flavour !== "podaffinity") c.fail("podAffinity", "only for flavour podaffinity");

    const storageServer = config.storageServer && resolveStorage(config, c, sshKey);
    if (config.persistentVolumes.length && !storageServer) c.fail("persistentVolumes", "needs a storageServer to serve the NFS exports");
    if (config.persistentVolumes.length && config.kubespray) c.fail("persistentVolumes", "are registered through the kubeadm cluster's API; a kubespray cluster does not have one in this stack");
    // A second manifest of one name would register over the first; a PV whose path no export covers shows
    // Available, and fails only when a pod mounts it.
    const pvNames = new Map<string, number>();
    const persistentVolumes = config.persistentVolumes.map((pv, i) => {
        const field = `persistentVolumes[${i}].manifestFile`;
        const file = files.read(field, pv.manifestFile, PV_MANIFEST);
        const manifest = file.text === undefined ? {} : (YAML.parse(file.text) as Record<string, unknown>);
        const { metadata, spec } = manifest as { metadata?: { name?: string }; spec?: { nfs?: { path?: string } } };
        const name = metadata?.name ?? "";
        if (pvNames.has(name)) c.fail(field, `registers PersistentVolume ${name}, as persistentVolumes[${pvNames.get(name)}] does`);
        if (name) pvNames.set(name, i);
        const nfsPath = spec?.nfs?.path;
        if (storageServer && typeof nfsPath === "string" && !storageServer.exports.some((e) => nfsPath.replace(/\/+$/, "") === e.dir || nfsPath.startsWith(`${e.dir}/`))) {
            c.fail(field, `its spec.nfs.path ${nfsPath} is under none of storageServer.exports (${storageServer.exports.map((e) => e.dir).join(", ")})`);
        }
        return { manifestFile: file.path, name, manifest };
    });

    const seenServers = new Map<string, number>();
    const mirrored = new Map<string, string>();
    for (const [i, r] of config.privateRegistries.entries()) {
        for (const [j, name] of r.mirrorOf.entries()) {
            const field = `privateRegistries[${i}].mirrorOf[${j}]`;
            if (isIP(name) === 6) c.fail(field, `an IPv6 registry is written [${name}] or [${name}]:port, as in its URL`);
            else if (mirrored.has(name)) c.fail(field, `${name} is mirrored by ${mirrored.get(name)} already`);
            else if (config.privateRegistries.some((other) => other.server === name)) c.fail(field, `${name} is a registry of privateRegistries itself`);
            mirrored.set(name, `privateRegistries[${i}].mirrorOf[${j}]`);
        }
    }
    const privateRegistries = config.privateRegistries.map((r, i) => {
        const field = `privateRegistries[${i}]`;
        if (seenServers.has(r.server)) c.fail(`${field}.server`, `duplicates privateRegistries[${seenServers.get(r.server)}].server`);
        seenServers.set(r.server, i);
        if (r.caCertificateFile && r.protocol !== "https") c.fail(`${field}.caCertificateFile`, "only for protocol https");
        if (isIP(r.server) === 6) c.fail(`${field}.server`, `an IPv6 registry is written [${r.server}] or [${r.server}]:port, as in its URL`);
        if ((r.username === undefined) !== (r.password === undefined)) {
            c.fail(`${field}.${r.username === undefined ? "username" : "password"}`, "username and password go together");
        }
        return {
            ...r,
            ...(r.caCertificateFile ? caCertificate(files.read(`${field}.caCertificateFile`, r.caCertificateFile, CA_CERTIFICATE)) : {}),
        };
    });

    let kubespray: ClusterSpec["kubespray"];
    if (config.kubespray) {
        const k = config.kubespray;
        if (!k.password && !sshKey) c.fail("kubespray.password", noLogin("kubespray.password"));
        if (k.host && k.server) c.fail("kubespray.server", "give either an existing host or a server to create, not both");
        const release = kubesprayRelease(k.version);
        if ("problem" in release) c.fail("kubespray.version", release.problem);
        const { kubeVersion } = checkKubespray(config, "problem" in release ? undefined : release, c);
        if (config.heal.nodes && Object.keys(config.heal.nodes).some((n) => n.startsWith("master-"))) {
            c.fail("heal.nodes", "kubespray has no playbook that replaces a control-plane node: heal the entire cluster (heal.generation)");
        }
        kubespray = {
            host: k.host,
            username: k.username,
            password: k.password,
            kubesprayRoot: k.kubesprayRoot,
            version: k.version,
            releaseFile: k.releaseFile && files.check("kubespray.releaseFile", k.releaseFile, KUBESPRAY_RELEASE),
            playbookTimeoutMinutes: k.playbookTimeoutMinutes,
            inventoryPath: k.inventoryPath ?? `/var/lib/k8s-vnf/inventory/${name}`,
            kubernetesVersion: config.kubernetes.version,
            kubeVersion,
            vars: k.vars,
            server: k.host ? undefined : resolveServer(config, "kubespray.server", {
                networkId: masters.server.networkId || undefined,
                username: k.username,
                password: k.password,
                // The stack makes this VM for its own logins: cloud-init creates the user (`ansible` in Tacker's
                // requests, no image's default user) with its password.
                enablePasswordLogin: Boolean(k.password),
                ...k.server,
            }, c, sshKey),
        };
    }

    const kubeadmVersion = config.kubernetes.version ?? DEFAULT_KUBERNETES_VERSION;
    const versionProblem = config.kubespray ? undefined : kubeadmVersionProblem(kubeadmVersion);
    if (versionProblem) c.fail("kubernetes.version", versionProblem);

    let externalLoadBalancer: ClusterSpec["externalLoadBalancer"];
    if (config.externalLoadBalancer) {
        const lb = config.externalLoadBalancer;
        const server = resolveServer(config, "externalLoadBalancer", lb, c, sshKey);
        externalLoadBalancer = {
            server,
            internalNetworkId: lb.internalNetworkId ?? masters.server.networkId,
            connectionPoint: lb.connectionPoint,
            apiPort: lb.apiPort,
        };
    }

    checkFixedIpsUnique(c, [
        ["masters.fixedIps", masters.fixedIps],
        ["workers.fixedIps", workers.fixedIps],
        ["storageServer.fixedIps", config.storageServer?.fixedIps ?? []],
        ["externalLoadBalancer.fixedIps", config.externalLoadBalancer?.fixedIps ?? []],
        ["kubespray.server.fixedIps", config.kubespray?.server?.fixedIps ?? []],
        ["controlPlane.vip", config.controlPlane.vip ? [config.controlPlane.vip] : []],
    ]);
    const securityGroup = resolveSecurityGroup(config, c);

    return {
        kind: "cluster",
        name,
        flavour,
        ha,
        masters,
        workers,
        kubernetes: { ...config.kubernetes, version: kubeadmVersion, podCidr: podCidr.text, serviceCidr: serviceCidr.text },
        controlPlane: config.controlPlane,
        heal: config.heal,
        operate: config.operate,
        proxy,
        securityGroup,
        serverGroupPolicy,
        flavourChange: change && { from: change.from, moved: change.moved },
        storageServer,
        persistentVolumes,
        privateRegistries,
        kubespray,
        externalLoadBalancer,
        tenants: resolveTenants(config, c),
        ssh: config.ssh,
        tacker: config.tacker,
    };
}

/** Tenants need the cluster's API in this stack (kubeadm); each name once. */
function resolveTenants(config: StackConfig, c: Checker): TenantSpec[] {
    if (config.tenants.length && config.kubespray) c.fail("tenants", "are made through the kubeadm cluster's API; a kubespray cluster does not have one in this stack");
    const seen = new Map<string, number>();
    config.tenants.forEach((t, i) => {
        if (seen.has(t.name)) c.fail(`tenants[${i}].name`, `duplicates tenants[${seen.get(t.name)}].name`);
        seen.set(t.name, i);
        if (t.role === "user" && t.namespaces.length === 0) c.fail(`tenants[${i}].namespaces`, "a user tenant acts in its namespaces only: name at least one");
        const reserved = t.namespaces.find((n) => n === "default" || n.startsWith("kube-"));
        if (reserved) c.fail(`tenants[${i}].namespaces`, `${reserved} is one of the namespaces every cluster has (default, kube-*); a tenant's namespaces are its own`);
    });
    return config.tenants;
}

/** Only the keys a CNF has; its manifests read from the package and planned by Tacker's rules. */
function resolveCnf(config: StackConfig, name: string, files: PackageFiles, c: Checker, options: ResolveOptions): CnfSpec {
    const vmKeys = ["storageServer", "kubespray", "externalLoadBalancer", "podAffinity", "proxy", "registry", "flavourChange", "network", "image", "flavor"] as const;
    for (const key of vmKeys) if (config[key]) c.fail(key, "not for vnfKind: cnf (a CNF runs on a Kubernetes VIM, not on VMs of its own)");
    if (config.persistentVolumes.length) c.fail("persistentVolumes", "only for vnfKind: cluster");
    if (config.privateRegistries.length) c.fail("privateRegistries", "only for vnfKind: cluster");
    if (config.tenants.length) c.fail("tenants", "only for vnfKind: cluster");
    if (config.operate.vnfState === "STOPPED" || config.operate.drained) c.fail("operate", "a CNF is not stopped or drained; scale it or terminate it");
    const cnf = config.cnf;
    if (!cnf) {
        c.fail("cnf", "vnfKind cnf needs the `cnf` settings");
        return undefined as unknown as CnfSpec;
    }
    const manifests = cnf.manifests.flatMap((file, i) => {
        const field = `cnf.manifests[${i}]`;
        const read = files.read(field, file, KUBERNETES_MANIFEST);
        return read.text === undefined ? [] : [{ field, file, text: read.text }];
    });
    const instanceId = cnf.instanceId ?? options.stackName;
    const planned = planCnfObjects(manifests, { namespace: cnf.namespace, instanceId, replicas: cnf.replicas, restarts: cnf.restarts });
    // Without the files (the converter without a package) there is nothing to plan from: only the files' problems count.
    if (manifests.length === cnf.manifests.length) for (const p of planned.problems) c.fail(p.path, p.message);
    if (cnf.vim.caCertificate === undefined) c.warn("cnf.vim.caCertificate", "not given: the API server's certificate is not checked (Tacker's verify_ssl False)");
    else if (checkPemCertificate(cnf.vim.caCertificate)) c.fail("cnf.vim.caCertificate", "not a PEM certificate");
    return {
        kind: "cnf",
        name,
        instanceId,
        namespace: planned.namespace,
        createNamespace: cnf.createNamespace,
        objects: planned.objects,
        workloads: planned.workloads,
        vim: cnf.vim,
        tacker: config.tacker,
    };
}

function resolveStorage(config: StackConfig, c: Checker, sshKey: boolean): ClusterSpec["storageServer"] {
    const s = config.storageServer!;
    const names = new Set<string>();
    const mounts: string[] = [];
    const volumes = s.volumes.map((v, i) => {
        if (names.has(v.name)) c.fail(`storageServer.volumes[${i}].name`, `duplicate volume name ${v.name}`);
        names.add(v.name);
        const mountTo = v.mountTo.replace(/\/+$/, "") || "/";
        if (mountTo === "/") c.fail(`storageServer.volumes[${i}].mountTo`, "cannot mount a volume on /");
        if (mounts.includes(mountTo)) c.fail(`storageServer.volumes[${i}].mountTo`, `${mountTo} is already a mount point`);
        mounts.push(mountTo);
        return { ...v, mountTo };
    });
    const dirs = new Set<string>();
    const exports = s.exports.map((e, i) => {
        const dir = e.dir.replace(/\/+$/, "");
        if (!mounts.some((m) => dir === m || dir.startsWith(`${m}/`))) {
            c.fail(`storageServer.exports[${i}].dir`, `${e.dir} is not on a mounted volume (${mounts.join(", ")}); it would export the VM's own disk`);
        }
        if (dirs.has(dir)) c.fail(`storageServer.exports[${i}].dir`, `${e.dir} is exported twice`);
        dirs.add(dir);
        return { dir, exportTo: c.network(`storageServer.exports[${i}].exportTo`, e.exportTo).text, squash: e.squash, insecure: e.insecure };
    });
    return {
        server: resolveServer(config, "storageServer", s, c, sshKey),
        connectionPoint: s.connectionPoint,
        volumes,
        exports,
        healWhileInUse: s.healWhileInUse,
    };
}

function resolvePortMove(move: StackConfig["workers"]["portMove"], count: number, c: Checker): NodeGroupSpec["portMove"] {
    if (!move) return undefined;
    const fixedIps = move.from.fixedIps ?? [];
    if (fixedIps.length && !move.from.subnetId) c.fail("workers.portMove.from.subnetId", "fixed IPs need the subnet they belong to");
    if (fixedIps.length && fixedIps.length < count) c.fail("workers.portMove.from.fixedIps", `has ${fixedIps.length} address(es) for ${count} workers; give one per VM`);
    if (move.moved > count) c.fail("workers.portMove.moved", `is ${move.moved}, above workers.count ${count}`);
    return { from: { ...move.from, fixedIps }, moved: move.moved };
}

function checkFixedIpsUnique(c: Checker, lists: [string, string[]][]): void {
    const seen = new Map<string, string>();
    for (const [field, ips] of lists) {
        ips.forEach((ip, i) => {
            const where = field.endsWith("vip") ? field : `${field}[${i}]`;
            if (seen.has(ip)) c.fail(where, `${ip} is also used by ${seen.get(ip)}`);
            else seen.set(ip, where);
        });
    }
}

