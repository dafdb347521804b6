/**
 * The VIMs the service holds, as records: made from a registration (Tacker's NFVO body), changed by an update,
 * removed only when nothing uses them. Checked before anything is stored, naming the field; credentials kept
 * as `__` fields, which no answer shows.
 */
import { randomUUID } from "node:crypto";
import { checkPemCertificate } from "../config/packageFiles";
import { kubernetesLabelName } from "../config/fields";
import { KubernetesVimSchema } from "../config/schema";
import { conflict, notFound, ProblemError } from "./problem";
import { Store } from "./store";
import { defaultVim, operationsRunningOn, vimUsers } from "./vimUsers";

type Body = Record<string, any>;

export async function findVim(store: Store, id: string): Promise<Body> {
    const vim = await store.get("vims", id);
    if (!vim) throw notFound("VIM", id);
    return vim;
}

/** A VIM as a GET shows it: as stored, its credentials masked, never unsealed. */
export async function shownVim(store: Store, id: string): Promise<Body> {
    const vim = await store.getMasked("vims", id);
    if (!vim) throw notFound("VIM", id);
    return vim;
}

/** A VIM from Tacker's registration body, checked before anything is stored; credentials kept as `__` fields. */
export async function registration(vim: Body, store: Store): Promise<Body> {
    const type: "openstack" | "kubernetes" = vim.type ?? "openstack";
    const record = type === "kubernetes" ? kubernetesVim(vim) : openstackVim(vim);
    const currentDefault = vim.is_default ? await defaultVim(store, type) : undefined;
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
export async function assertRemovable(store: Store, vim: Body): Promise<void> {
    if (vim.__clusterInstanceId) throw conflict(`VIM ${vim.id} is VNF instance ${vim.__clusterInstanceId}'s Kubernetes VIM and goes when that instance is terminated`);
    const users = await vimUsers(store, [String(vim.id)]);
    if (users.length) throw conflict(`VIM ${vim.id} is in use by VNF instance(s) ${users.map((u) => u.id).join(", ")}: terminate them first`);
}

/**
 * A VIM changes only by a request of its own and while no operation runs on it: a cluster's own Kubernetes VIM
 * changes with the cluster, and a running operation's commands hold the credentials they started with (and
 * its error texts are redacted with the VIM's current ones).
 */
async function assertChangeable(store: Store, vim: Body): Promise<void> {
    if (vim.__clusterInstanceId) throw conflict(`VIM ${vim.id} is VNF instance ${vim.__clusterInstanceId}'s Kubernetes VIM: its endpoint and token are the cluster's and change with it`);
    const running = await operationsRunningOn(store, String(vim.id));
    if (running.length) throw conflict(`VIM ${vim.id} is in use by operation(s) ${running.map((o) => `${o.id} (${o.operation})`).join(", ")}, which run with its credentials of when they started: change it when they have ended`);
}

/** The instances on a VIM were made in its project and region (an OpenStack project, a namespace): it does not move under them. */
async function assertSamePlace(store: Store, before: Body, after: Body, field: string): Promise<void> {
    const place = (v: Body) => [v.projectName, v.projectDomainName ?? "", v.region ?? ""].join("\n");
    if (place(before) === place(after)) return;
    const users = await vimUsers(store, [String(before.id)]);
    if (users.length) throw conflict(`${field}: VIM ${before.id} is in use by VNF instance(s) ${users.map((u) => u.id).join(", ")}, made in project ${before.projectName}${before.region ? ` of region ${before.region}` : ""}; terminate them before moving the VIM`);
}

/** `--is-default` again: one default per type. */
async function assertOnlyDefault(store: Store, vim: Body): Promise<void> {
    const current = vim.isDefault ? await defaultVim(store, vim.type ?? "openstack") : undefined;
    if (current && current.id !== vim.id) throw conflict(`vim.is_default: ${vim.type ?? "openstack"} VIM ${current.id} (${current.name}) is the default already; unset it first`);
}

/**
 * A VIM changed by Tacker's `PUT /v1.0/vims/{id}` body (python-tackerclient `vim set`): name, description and
 * is_default as given; auth_cred and vim_project, when given, merged over the VIM's and checked as at
 * registration (its auth_url and type stay: Tacker's NFVO extension has them read-only).
 */
export async function tackerUpdate(store: Store, vim: Body, change: Body): Promise<Body> {
    await assertChangeable(store, vim);
    const kubernetes = vim.type === "kubernetes";
    let next: Body = { ...vim };
    if (change.auth_cred !== undefined || change.vim_project !== undefined) {
        const { authUrl: _u, username: _n, userDomainName: _d, projectName: _p, projectDomainName: _pd, caCertificate: _c, namespaces: _ns, __password: _pw, __token: _t, ...kept } = vim;
        const current = kubernetes
            ? { auth_cred: { bearer_token: vim.__token, ...(vim.caCertificate ? { ssl_ca_cert: vim.caCertificate } : {}) }, vim_project: { name: vim.projectName } }
            : { auth_cred: { username: vim.username, password: vim.__password, ...(vim.userDomainName ? { user_domain_name: vim.userDomainName } : {}) }, vim_project: { name: vim.projectName, ...(vim.projectDomainName ? { project_domain_name: vim.projectDomainName } : {}) } };
        // Tacker's update_vim deep-merges the change (utils.deep_update): what it leaves out stays.
        const asked = { auth_url: vim.authUrl, auth_cred: { ...current.auth_cred, ...change.auth_cred }, vim_project: { ...current.vim_project, ...change.vim_project } };
        next = { ...kept, ...(kubernetes ? kubernetesVim(asked) : openstackVim(asked)) };
    }
    if (change.name !== undefined) next.name = change.name;
    if (change.description !== undefined) next.description = change.description;
    if (change.is_default !== undefined) next.isDefault = change.is_default;
    await assertOnlyDefault(store, next);
    await assertSamePlace(store, vim, next, "vim.vim_project.name");
    return { ...next, updatedAt: new Date().toISOString() };
}

/** An OpenStack VIM changed by a merge patch of its registration's fields (`PATCH /k8s-vnf/v1/vims/{id}`). */
export async function patchUpdate(store: Store, vim: Body, change: Body): Promise<Body> {
    await assertChangeable(store, vim);
    if (vim.type === "kubernetes") throw conflict(`VIM ${vim.id} is a Kubernetes VIM: change it with \`openstack vim set\` (PUT /v1.0/vims/${vim.id})`);
    const { password, ...fields } = change;
    const next = { ...vim, ...fields, ...(password === undefined ? {} : { __password: password }), updatedAt: new Date().toISOString() };
    await assertSamePlace(store, vim, next, change.region !== undefined && change.projectName === undefined ? "region" : "projectName");
    return next;
}

/** The `OS_*` variables of a registered OpenStack VIM, for the Pulumi commands of an operation on it. */
export function openStackEnvOf(vim: Body): Record<string, string> {
    const env: Record<string, string> = {
        OS_AUTH_URL: String(vim.authUrl),
        OS_USERNAME: String(vim.username),
        OS_PASSWORD: String(vim.__password),
        OS_PROJECT_NAME: String(vim.projectName),
        OS_USER_DOMAIN_NAME: String(vim.userDomainName ?? "Default"),
        OS_PROJECT_DOMAIN_NAME: String(vim.projectDomainName ?? "Default"),
    };
    if (vim.region) env.OS_REGION_NAME = String(vim.region);
    return env;
}
