/**
 * The VIMs the service holds: OpenStack credentials for clusters' VMs, and Kubernetes VIMs for CNFs. Its
 * clusters' Kubernetes VIMs come from their stack outputs (kubernetesVims.ts); others are registered here, as
 * with Tacker, by `openstack vim register --config-file vim.yaml NAME` (Tacker's NFVO API, `POST /v1.0/vims`;
 * python-tackerclient `tacker/v1_0/nfvo/vim_utils.py` `args2body_vim` makes the body) or, for OpenStack, by
 * `POST /k8s-vnf/v1/vims`. No answer ever carries a VIM's password or token.
 */
import { randomUUID } from "node:crypto";
import { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { checkPemCertificate } from "../config/resolve";
import { kubernetesLabelName } from "../config/fields";
import { KubernetesVimSchema } from "../config/schema";
import { tackerVimView } from "./kubernetesVims";
import { conflict, notFound, ProblemError } from "./problem";
import { SCHEMAS } from "./schemas";
import { Store } from "./store";
import { defaultVim, vimUsers } from "./vimUsers";

type Body = Record<string, any>;

export interface VimRouteContext {
    store: Store;
    /** The base URL of `Location` headers. */
    base: (request: FastifyRequest) => string;
    /** What a GET shows of a stored record. */
    visible: (record: Body) => Body;
}

export function vimRoutes(app: FastifyInstance, { store, base, visible }: VimRouteContext): void {
    app.post(`/k8s-vnf/v1/vims`, { schema: { body: SCHEMAS.vimRegistration } }, async (request, reply) => {
        const { password, id: requested, ...rest } = request.body as Body;
        const id = requested ?? randomUUID();
        if (store.get("vims", id)) throw conflict(`VIM ${id} is already registered`);
        store.put([{ table: "vims", id, body: { id, ...rest, __password: password } }]);
        return reply.code(201).header("location", `${base(request)}/k8s-vnf/v1/vims/${id}`).send({ id, ...rest });
    });
    app.get(`/k8s-vnf/v1/vims`, async () => store.list("vims").map(visible));
    app.get<{ Params: { id: string } }>(`/k8s-vnf/v1/vims/:id`, async (request) => visible(findVim(store, request.params.id)));

    // Tacker's NFVO VIM API, what `openstack vim list/show/register/delete` call.
    const tackerVims = async (request: FastifyRequest) => {
        const query = request.query as Record<string, string | undefined>;
        const vims = store.list("vims").filter((v) => (query.id === undefined || v.id === query.id) && (query.name === undefined || v.name === query.name));
        return { vims: vims.map(tackerVimView) };
    };
    const tackerVim = async (request: FastifyRequest<{ Params: { id: string } }>) => ({ vim: tackerVimView(findVim(store, idOf(request.params.id))) });
    const register = async (request: FastifyRequest, reply: FastifyReply) => {
        const record = registration((request.body as Body).vim, store);
        store.put([{ table: "vims", id: record.id, body: record }]);
        return reply.code(201).send({ vim: tackerVimView(record) });
    };
    const unregister = async (request: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) => {
        const vim = findVim(store, idOf(request.params.id));
        assertRemovable(store, vim);
        store.remove("vims", String(vim.id));
        return reply.code(204).send();
    };
    app.get("/v1.0/vims", tackerVims);
    app.get("/v1.0/vims.json", tackerVims);
    app.post("/v1.0/vims", { schema: { body: SCHEMAS.tackerVimRegistration } }, register);
    app.post("/v1.0/vims.json", { schema: { body: SCHEMAS.tackerVimRegistration } }, register);
    app.get<{ Params: { id: string } }>("/v1.0/vims/:id", tackerVim);
    app.delete<{ Params: { id: string } }>("/v1.0/vims/:id", unregister);
}

/** The client may add `.json` to a VIM's path (python-tackerclient's `format`). */
const idOf = (segment: string) => segment.replace(/\.json$/, "");

function findVim(store: Store, id: string): Body {
    const vim = store.get("vims", id);
    if (!vim) throw notFound("VIM", id);
    return vim;
}

/** A VIM from Tacker's registration body, checked before anything is stored; credentials kept as `__` fields. */
function registration(vim: Body, store: Store): Body {
    const type: "openstack" | "kubernetes" = vim.type ?? "openstack";
    const record = type === "kubernetes" ? kubernetesVim(vim) : openstackVim(vim);
    const currentDefault = vim.is_default ? defaultVim(store, type) : undefined;
    if (currentDefault) throw conflict(`vim.is_default: ${type} VIM ${currentDefault.id} (${currentDefault.name}) is the default already; delete it, or register this one without --is-default`);
    return { id: randomUUID(), name: vim.name, description: vim.description ?? "", isDefault: vim.is_default === true, createdAt: new Date().toISOString(), ...record };
}

function kubernetesVim(vim: Body): Body {
    const cred = vim.auth_cred as Body;
    if (cred.bearer_token === undefined) {
        throw new ProblemError(400, "vim.auth_cred.bearer_token: a Kubernetes VIM of this service is reached with a ServiceAccount's bearer token (bearer_token in the config file); usernames, passwords and OIDC are not supported");
    }
    // The same rules as a CNF stack's `cnf.vim`, checked now rather than at the first instantiate.
    const problems: string[] = [];
    const checked = KubernetesVimSchema.safeParse({ endpoint: vim.auth_url, ...(cred.ssl_ca_cert ? { caCertificate: cred.ssl_ca_cert } : {}), token: cred.bearer_token });
    if (!checked.success) {
        const fields: Record<string, string> = { endpoint: "vim.auth_url", caCertificate: "vim.auth_cred.ssl_ca_cert", token: "vim.auth_cred.bearer_token" };
        problems.push(...checked.error.issues.map((i) => `${fields[String(i.path[0])] ?? "vim"}: ${i.message}`));
    }
    if (cred.ssl_ca_cert && checkPemCertificate(cred.ssl_ca_cert)) problems.push("vim.auth_cred.ssl_ca_cert: not a PEM certificate");
    // Tacker's project of a Kubernetes VIM is a namespace (python-tackerclient: "it is namespace in Kubernetes environment").
    const namespace = String(vim.vim_project?.name || "default");
    if (!kubernetesLabelName.safeParse(namespace).success) problems.push("vim.vim_project.name: must be a Kubernetes namespace name (lower-case letters, digits and '-')");
    if (problems.length) throw new ProblemError(400, problems.join("; "));
    return { type: "kubernetes", authUrl: vim.auth_url.replace(/\/+$/, ""), caCertificate: cred.ssl_ca_cert || undefined, projectName: namespace, namespaces: [namespace], __token: cred.bearer_token };
}

function openstackVim(vim: Body): Body {
    const cred = vim.auth_cred as Body;
    const project = (vim.vim_project ?? {}) as Body;
    const problems = [
        ...["username", "password"].filter((k) => !cred[k]).map((k) => `vim.auth_cred.${k}: is required for an OpenStack VIM`),
        ...(project.name ? [] : ["vim.vim_project.name: is required for an OpenStack VIM"]),
        ...(/^https?:\/\/[^\s]+$/.test(vim.auth_url) ? [] : ["vim.auth_url: must be Keystone's http(s):// URL"]),
        ...(cred.cert_verify === "False" ? ["vim.auth_cred.cert_verify: this service always verifies the VIM's certificate (give Keystone's CA to the service's environment instead)"] : []),
    ];
    if (problems.length) throw new ProblemError(400, problems.join("; "));
    return {
        authUrl: vim.auth_url,
        username: cred.username,
        projectName: project.name,
        ...(cred.user_domain_name ? { userDomainName: cred.user_domain_name } : {}),
        ...(project.project_domain_name ? { projectDomainName: project.project_domain_name } : {}),
        __password: cred.password,
    };
}

/** A VIM goes only when nothing uses it (Tacker refuses to delete a VIM in use), and a cluster's with its cluster. */
function assertRemovable(store: Store, vim: Body): void {
    if (vim.__clusterInstanceId) throw conflict(`VIM ${vim.id} is VNF instance ${vim.__clusterInstanceId}'s Kubernetes VIM and goes when that instance is terminated`);
    const users = vimUsers(store, [String(vim.id)]);
    if (users.length) throw conflict(`VIM ${vim.id} is in use by VNF instance(s) ${users.map((u) => u.id).join(", ")}: terminate them first`);
}
