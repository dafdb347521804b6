/**
 * Where a CNF goes and with what, for the LCM service: the Kubernetes VIM a request names (registered by the
 * service, or given inline), the package's manifests and VNFD, the namespace (whether this CNF creates it,
 * shares it, or may not use it), and the VIM's current credentials for each later operation (an entire heal of
 * the cluster gives it a new CA and tokens).
 */
import * as path from "node:path";
import { ConfigError, CnfSpec } from "../config/spec";
import { initialReplicas, VnfdLookup } from "./cnfOperations";
import { BUILT_IN_NAMESPACES } from "./kubernetesVims";
import { conflict, ProblemError } from "./problem";
import { Store } from "./store";
import { defaultVim, unfinishedInstantiateByInstance, vimUsers } from "./vimUsers";

type Body = Record<string, any>;
type Config = Record<string, unknown>;

const cnfRequests = () => require("../config/tackerCnf") as typeof import("../config/tackerCnf");
const vnfdReader = () => require("../config/vnfd") as typeof import("../config/vnfd");

/** A Kubernetes VIM as a CNF uses it. */
interface CnfVim {
    id?: string;
    name: string;
    endpoint: string;
    caCertificate?: string;
    token: string;
    /** Namespaces the cluster has (built-in, its tenants'). */
    namespaces?: string[];
    /** A user tenant's: the only namespaces its token acts in. */
    tenant?: { name: string; namespaces: string[] };
}

/** What instantiating a CNF will do. */
export interface CnfInstantiation {
    config: Config;
    kubernetesVimId?: string;
    /** The namespace its namespaced objects go into. */
    namespace: string;
}

export class CnfPlanner {
    constructor(
        private readonly store: Store,
        private readonly options: { projectDir: string; packagesDir?: string; packageOf: (instance: Body) => string | undefined },
    ) {}

    /**
     * Instantiation: the VIM, the manifests planned into one namespace, each scalable VDU at its initial delta.
     * The CNF creates its namespace (and deletes it when terminated) unless the cluster has it (built-in, a
     * tenant's) or another CNF is in it, or about to be.
     */
    async instantiate(instance: Body, params: Body, stackName: string, check: (config: Config, source: string) => unknown): Promise<CnfInstantiation> {
        const vim = await this.vimOf(params);
        const packageDir = this.options.packageOf(instance);
        if (!packageDir) {
            const where = this.options.packagesDir ? `put the unpacked package in ${path.join(this.options.packagesDir, "<vnfdId>")}` : "start the service with --packages DIR, DIR/<vnfdId>/ holding the unpacked package";
            throw new ProblemError(400, `additionalParams.lcm-kubernetes-def-files names files of the VNF package, and this service has no package for vnfdId ${JSON.stringify(String(instance.vnfdId))}: ${where}`);
        }
        let converted;
        try {
            converted = cnfRequests().convertCnfInstantiateRequest(params as never, {
                baseDir: this.options.projectDir,
                stackName,
                packageDir,
                vim: { endpoint: vim.endpoint, ...(vim.caCertificate ? { caCertificate: vim.caCertificate } : {}), token: vim.token },
                instanceId: String(instance.id),
            });
        } catch (e) {
            if (e instanceof ConfigError) throw new ProblemError(400, e.message);
            throw e;
        }
        const spec = converted.loaded.spec as CnfSpec;
        if (vim.tenant) {
            if (!vim.tenant.namespaces.includes(spec.namespace)) {
                throw new ProblemError(400, `additionalParams.namespace: VIM ${vim.name} is tenant ${vim.tenant.name}'s, which acts in ${vim.tenant.namespaces.join(", ")} only, not in ${spec.namespace}`);
            }
            const clusterScoped = spec.objects.find((o) => o.object.metadata.namespace === undefined);
            if (clusterScoped) {
                throw new ProblemError(400, `additionalParams.lcm-kubernetes-def-files: ${clusterScoped.object.kind} ${clusterScoped.object.metadata.name} is cluster-wide, and tenant ${vim.tenant.name}'s VIM acts in its namespaces only`);
            }
        }
        const createNamespace = !BUILT_IN_NAMESPACES.includes(spec.namespace) && !(vim.namespaces ?? []).includes(spec.namespace) && (await this.cnfsIn(vim.endpoint, spec.namespace, String(instance.id))).length === 0;
        const deployed = new Set(spec.workloads.map((w) => w.name));
        const vnfd = this.vnfdOf(instance, params.flavourId);
        const replicas = Object.fromEntries(Object.entries("problem" in vnfd ? {} : initialReplicas(vnfd)).filter(([name]) => deployed.has(name)));
        const config = { ...converted.config, cnf: { ...(converted.config.cnf as Body), createNamespace, replicas } };
        check(config, "instantiate request");
        return { config, kubernetesVimId: vim.id, namespace: spec.namespace };
    }

    /** A CNF's config with its registered VIM's credentials as they are now (an entire heal of the cluster renews them). */
    async withCurrentVim(instance: Body, config: Config): Promise<Config> {
        const vim = instance.__kubernetesVimId ? await this.store.get("vims", String(instance.__kubernetesVimId)) : undefined;
        if (!vim) return config;
        const cnf = config.cnf as Body;
        return { ...config, cnf: { ...cnf, vim: { endpoint: vim.authUrl, ...(vim.caCertificate ? { caCertificate: vim.caCertificate } : {}), token: vim.__token } } };
    }

    /**
     * The VNFD of an instance's package for its flavour, or why there is none; with `deployed` (the workloads
     * the CNF runs), only the aspects whose every VDU is one of them.
     */
    vnfdOf(instance: Body, flavourId: string | undefined = instance.instantiatedVnfInfo?.flavourId, deployed?: Set<string>): VnfdLookup {
        const dir = this.options.packageOf(instance);
        if (!dir) return { problem: `this service has no package for vnfdId ${JSON.stringify(String(instance.vnfdId))}, whose VNFD says how the CNF scales` };
        let vnfd;
        try {
            vnfd = vnfdReader().readCnfVnfd(dir, flavourId);
        } catch (e) {
            if (e instanceof ConfigError) return { problem: e.message };
            throw e;
        }
        if (!vnfd) return { problem: "the VNF package has no VNFD (Definitions/), which says how the CNF scales" };
        if (!deployed) return vnfd;
        const nameOf = (vduId: string) => vnfd.vdus.find((v) => v.vduId === vduId)?.name ?? vduId;
        return { ...vnfd, aspects: vnfd.aspects.filter((a) => a.deltas.every((d) => deployed.has(nameOf(d.vduId)))) };
    }

    /** A CNF that created its namespace deletes it with itself: not while other CNFs are in it. */
    async assertNamespaceUnshared(instance: Body): Promise<void> {
        const cnf = (instance.__stackConfig as Body).cnf;
        if (!cnf.createNamespace) return;
        const namespace = String(instance.__namespace);
        const others = await this.cnfsIn(cnf.vim.endpoint, namespace, String(instance.id));
        if (others.length) {
            const names = others.map((o) => o.id).join(", ");
            throw conflict(`namespace ${namespace} was created by VNF instance ${instance.id} and goes with it, and VNF instance(s) ${names} still use it: terminate them first`);
        }
    }

    /** A cluster's VIMs may not go while CNFs run on them (Tacker refuses to delete a VIM in use). */
    async assertNoCnfOn(vimIds: string[], clusterId: string): Promise<void> {
        const users = await vimUsers(this.store, vimIds);
        if (users.length) throw conflict(`CNFs run on the Kubernetes VIM of VNF instance ${clusterId}: ${users.map((u) => u.id).join(", ")}; terminate them first`);
    }

    /** The VIM a CNF request names: registered (by vimId) or inline (SOL003 interfaceInfo/accessInfo). */
    private async vimOf(params: Body): Promise<CnfVim> {
        const all: Body[] = params.vimConnectionInfo ?? [];
        const kubernetes = all.map((v, i) => ({ v, i })).filter(({ v }) => cnfRequests().KUBERNETES_VIM_TYPES.has(String(v.vimType)));
        // As with Tacker, a request naming no Kubernetes VIM goes to the one registered with --is-default.
        const fallback = kubernetes.length === 0 ? await defaultVim(this.store, "kubernetes") : undefined;
        if (fallback) kubernetes.push({ v: { vimId: fallback.id }, i: all.length });
        if (kubernetes.length !== 1) {
            throw new ProblemError(400, "vimConnectionInfo: a CNF names one Kubernetes VIM (vimType kubernetes or ETSINFV.KUBERNETES.V_1): its vimId as `openstack vim list` shows it, or interfaceInfo.endpoint and accessInfo.bearer_token");
        }
        const [{ v: entry, i: index }] = kubernetes;
        if (entry.vimId !== undefined) {
            const vim = (await this.store.get("vims", String(entry.vimId))) as Body | undefined;
            if (!vim || vim.type !== "kubernetes") {
                throw new ProblemError(400, `vimConnectionInfo[${index}].vimId: no Kubernetes VIM ${JSON.stringify(String(entry.vimId))} is registered with this service; \`openstack vim list\` shows the VIMs of its clusters`);
            }
            const tenant = vim.role === "user" ? { tenant: { name: String(vim.tenant), namespaces: vim.namespaces as string[] } } : {};
            return { id: String(vim.id), name: String(vim.name), endpoint: String(vim.authUrl), caCertificate: vim.caCertificate, token: String(vim.__token), namespaces: vim.namespaces, ...tenant };
        }
        const endpoint = entry.interfaceInfo?.endpoint;
        const token = entry.accessInfo?.bearer_token;
        if (typeof endpoint !== "string" || typeof token !== "string") {
            throw new ProblemError(400, `vimConnectionInfo[${index}]: give the vimId of a registered Kubernetes VIM, or interfaceInfo.endpoint and accessInfo.bearer_token`);
        }
        return { name: endpoint, endpoint: endpoint.replace(/\/+$/, ""), caCertificate: entry.interfaceInfo?.ssl_ca_cert, token };
    }

    /** Other CNFs in a namespace of a cluster: instantiated, or being instantiated there. */
    private async cnfsIn(endpoint: string, namespace: string, except: string): Promise<Body[]> {
        const unfinished = await unfinishedInstantiateByInstance(this.store);
        return (await this.store.list("vnf_instances")).filter((i) => {
            if (i.id === except) return false;
            if (i.instantiationState === "INSTANTIATED") return (i.__stackConfig as Body | undefined)?.cnf?.vim?.endpoint === endpoint && i.__namespace === namespace;
            const plan = unfinished.get(String(i.id))?.__plan as Body | undefined;
            return plan?.config?.cnf?.vim?.endpoint === endpoint && plan?.cnfNamespace === namespace;
        });
    }
}
