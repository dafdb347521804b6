/**
 * The Kubernetes VIMs the service keeps for its clusters: when a cluster instance is instantiated (or healed
 * whole, with a new CA and tokens) its stack outputs become a VIM under `tacker.vimName` (Tacker's default
 * `kubernetes_vim_<instance id>`), and each tenant one more (`<vim name>_<tenant>`); terminating the cluster
 * removes them. Names need not be unique (the seeds' clusters all say `kubernetes_vim`): a VIM is named by its
 * id. Optionally each is registered in a Tacker NFVO too (`POST /v1.0/vims`, as Tacker's
 * kubespray_mgmt.py `_create_vim` does), updated and deleted with it. Tokens are kept as `__token`, never shown.
 */
import { randomUUID } from "node:crypto";
import { Store } from "./store";

type Body = Record<string, any>;

/** A VIM of a cluster, as the stack outputs describe it. */
interface ClusterVim {
    name: string;
    endpoint: string;
    caCertificate: string;
    token: string;
    /** Namespaces it is registered for (Tacker's placement_attr.regions); a tenant's own, or all it knows of. */
    namespaces: string[];
    tenant?: { name: string; role: string };
}

/** A Tacker NFVO's VIM API, when the service is configured with one. */
export interface NfvoOptions {
    url: string;
    /** Its Keystone token (X-Auth-Token). */
    token?: string;
}

/** The namespaces every cluster has (kube-apiserver makes them). */
export const BUILT_IN_NAMESPACES = ["default", "kube-system", "kube-public", "kube-node-lease"];

export class KubernetesVims {
    constructor(
        private readonly store: Store,
        private readonly nfvo?: NfvoOptions,
    ) {}

    /** The VIM name a cluster instance registers under. */
    static nameOf(instanceId: string, config: Record<string, unknown> | undefined): string {
        return String((config?.tacker as Body | undefined)?.vimName ?? `kubernetes_vim_${instanceId}`);
    }

    /** The VIMs of a cluster instance. */
    async ofCluster(instanceId: string): Promise<Body[]> {
        return (await this.store.list("vims")).filter((v) => v.__clusterInstanceId === instanceId);
    }

    /** Registers (or refreshes) a cluster's VIMs from its stack outputs; returns the cluster's own VIM. */
    async register(instanceId: string, config: Record<string, unknown> | undefined, outputs: Body): Promise<Body | undefined> {
        if (!outputs.vim) return undefined;
        const name = KubernetesVims.nameOf(instanceId, config);
        const tenants = (outputs.tenants ?? []) as { name: string; role: string; namespaces: string[] }[];
        const tokens = (outputs.tenantTokens ?? {}) as Record<string, string>;
        const known = [...new Set([...BUILT_IN_NAMESPACES, ...tenants.flatMap((t) => t.namespaces)])];
        const wanted: ClusterVim[] = [
            { name, endpoint: outputs.vim.endpoint, caCertificate: outputs.vim.caCertificate, token: outputs.vimToken, namespaces: known },
            ...tenants.map((t) => ({
                name: `${name}_${t.name}`,
                endpoint: outputs.vim.endpoint,
                caCertificate: outputs.vim.caCertificate,
                token: tokens[t.name],
                namespaces: t.role === "admin" ? known : t.namespaces,
                tenant: { name: t.name, role: t.role },
            })),
        ];
        const existing = await this.ofCluster(instanceId);
        for (const gone of existing.filter((v) => !wanted.some((w) => w.name === v.name))) await this.remove(gone);
        let own: Body | undefined;
        for (const vim of wanted) {
            const before = existing.find((v) => v.name === vim.name);
            const record = await this.put(instanceId, vim, before);
            if (!vim.tenant) own = record;
        }
        return own;
    }

    /** Removes a cluster's VIMs (terminate), each from the NFVO first: a failure there leaves it here for a retry. */
    async unregister(instanceId: string): Promise<void> {
        for (const vim of await this.ofCluster(instanceId)) await this.remove(vim);
    }

    private async put(instanceId: string, vim: ClusterVim, before: Body | undefined): Promise<Body> {
        const id = before?.id ?? randomUUID();
        const now = new Date().toISOString();
        const record: Body = {
            id,
            name: vim.name,
            type: "kubernetes",
            authUrl: vim.endpoint,
            caCertificate: vim.caCertificate,
            namespaces: vim.namespaces,
            ...(vim.tenant ? { tenant: vim.tenant.name, role: vim.tenant.role } : {}),
            vnfInstanceId: instanceId,
            createdAt: before?.createdAt ?? now,
            updatedAt: now,
            __token: vim.token,
            __clusterInstanceId: instanceId,
            __nfvoId: before?.__nfvoId,
        };
        // The NFVO hears of it when it is new or its credentials changed (an entire heal), not after every operation.
        const changed = !before || before.authUrl !== vim.endpoint || before.caCertificate !== vim.caCertificate || before.__token !== vim.token;
        if (this.nfvo && (changed || !before.__nfvoId)) record.__nfvoId = await this.nfvoPut(vim, before?.__nfvoId);
        await this.store.put([{ table: "vims", id, body: record }]);
        return record;
    }

    private async remove(vim: Body): Promise<void> {
        if (this.nfvo && vim.__nfvoId) await this.nfvoCall("DELETE", `/v1.0/vims/${encodeURIComponent(vim.__nfvoId)}`, undefined, [204, 404]);
        await this.store.remove("vims", String(vim.id));
    }

    /** Registers the VIM in the NFVO, or updates the one registered before; returns its NFVO id. */
    private async nfvoPut(vim: ClusterVim, nfvoId: string | undefined): Promise<string> {
        const authCred = { bearer_token: vim.token, ssl_ca_cert: vim.caCertificate };
        if (nfvoId) {
            const updated = await this.nfvoCall("PUT", `/v1.0/vims/${encodeURIComponent(nfvoId)}`, { vim: { auth_cred: authCred } }, [200, 404]);
            if (updated.status === 200) return nfvoId;
        }
        const body = {
            vim: {
                type: "kubernetes",
                name: vim.name,
                description: `Kubernetes VIM of VNF instance (k8s-vnf)${vim.tenant ? `, tenant ${vim.tenant.name}` : ""}`,
                auth_url: vim.endpoint,
                auth_cred: authCred,
                vim_project: { name: "default" },
                is_default: false,
            },
        };
        const created = await this.nfvoCall("POST", "/v1.0/vims", body, [201]);
        return String(created.body?.vim?.id);
    }

    private async nfvoCall(method: string, route: string, body: unknown, ok: number[]): Promise<{ status: number; body: Body | undefined }> {
        const response = await fetch(`${this.nfvo!.url.replace(/\/$/, "")}${route}`, {
            method,
            headers: { "content-type": "application/json", accept: "application/json", ...(this.nfvo!.token ? { "x-auth-token": this.nfvo!.token } : {}) },
            body: body === undefined ? undefined : JSON.stringify(body),
            redirect: "manual",
            signal: AbortSignal.timeout(30_000),
        });
        const text = await response.text();
        // The answer is not quoted: an NFVO may echo the request, token included.
        if (!ok.includes(response.status)) throw new Error(`the Tacker NFVO answered ${method} ${route} with HTTP ${response.status}`);
        return { status: response.status, body: text ? (JSON.parse(text) as Body) : undefined };
    }
}

/** A VIM as Tacker's NFVO API shows it (`openstack vim list/show`): no credentials. */
export function tackerVimView(vim: Body): Body {
    return {
        id: vim.id,
        name: vim.name,
        type: vim.type ?? "openstack",
        tenant_id: vim.projectId ?? "",
        auth_url: vim.authUrl,
        vim_project: { name: vim.projectName ?? "default" },
        placement_attr: { regions: vim.namespaces ?? (vim.region ? [vim.region] : []) },
        status: "ACTIVE",
        is_default: vim.isDefault === true,
        description: vim.description ?? "",
        created_at: vim.createdAt ?? null,
        updated_at: vim.updatedAt ?? null,
    };
}
