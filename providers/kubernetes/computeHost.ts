/**
 * Which compute host a server runs on: Nova's `OS-EXT-SRV-ATTR:host`, read through the OpenStack APIs
 * (a Keystone v3 token by password or application credential, then the compute endpoint of the catalog).
 * Nova shows the attribute to admins by default. Serialized with the label provider: node built-ins only.
 */

/** OpenStack credentials, as the stack's `openstack:*` configuration, its clouds.yaml cloud or OS_* variables give them. */
export interface ComputeApi {
    authUrl: string;
    /** Password authentication: user, password and the project to scope to. */
    username?: string;
    password?: string;
    projectName?: string;
    projectId?: string;
    userDomainName?: string;
    projectDomainName?: string;
    /** Domains by id, where the cloud gives ids (they win over the names). */
    userDomainId?: string;
    projectDomainId?: string;
    /** Application credential authentication (clouds.yaml `v3applicationcredential`); it carries its own scope. */
    applicationCredentialId?: string;
    applicationCredentialSecret?: string;
    region?: string;
    /**
     * Keystone's and Nova's CA (PEM) when not one the system trusts (clouds.yaml `cacert`, OS_CACERT). It replaces
     * the system's roots, as gophercloud's RootCAs does: both endpoints must have certificates from it.
     */
    caCertificate?: string;
}

const REQUEST_TIMEOUT_MS = 30_000;

interface Answer {
    status: number;
    headers: Record<string, string | string[] | undefined>;
    text: string;
}

/** An HTTP(S) request trusting only `ca` when it is given (fetch takes no CA of its own). */
function request(url: string, init: { method?: string; headers: Record<string, string>; body?: string; ca?: string }): Promise<Answer> {
    const target = new URL(url);
    const transport = target.protocol === "https:" ? require("node:https") : require("node:http");
    return new Promise((resolve, reject) => {
        const req = transport.request(target, { method: init.method ?? "GET", headers: init.headers, timeout: REQUEST_TIMEOUT_MS, ...(init.ca ? { ca: init.ca } : {}) }, (res: import("node:http").IncomingMessage) => {
            let text = "";
            res.setEncoding("utf8");
            res.on("data", (chunk: string) => (text += chunk));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
            res.on("error", reject);
        });
        req.on("timeout", () => req.destroy(new Error(`${target.origin} did not answer within ${REQUEST_TIMEOUT_MS / 1000} s`)));
        req.on("error", reject);
        req.end(init.body);
    });
}

function failure(what: string, answer: Answer): Error {
    const body = answer.text.slice(0, 300);
    return new Error(`${what}: HTTP ${answer.status}${body ? ` ${body}` : ""}`);
}

/** Keystone v3's identity for `api`: an application credential, or a password scoped to the project. */
function identityOf(api: ComputeApi): Record<string, unknown> {
    if (api.applicationCredentialId) {
        return { identity: { methods: ["application_credential"], application_credential: { id: api.applicationCredentialId, secret: api.applicationCredentialSecret } } };
    }
    const domain = (id?: string, name?: string) => (id ? { id } : { name });
    const project = api.projectId ? { id: api.projectId } : { name: api.projectName, domain: domain(api.projectDomainId, api.projectDomainName) };
    return { identity: { methods: ["password"], password: { user: { name: api.username, domain: domain(api.userDomainId, api.userDomainName), password: api.password } } }, scope: { project } };
}

export async function computeHostOf(api: ComputeApi, serverId: string): Promise<string> {
    const identity = api.authUrl.replace(/\/+$/, "").replace(/(\/v3)?$/, "/v3");
    const auth = await request(`${identity}/auth/tokens`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ auth: identityOf(api) }), ca: api.caCertificate });
    if (auth.status !== 201) throw failure(`Keystone at ${identity} refused the stack's credentials`, auth);
    const token = String(auth.headers["x-subject-token"] ?? "");
    const catalog: { type: string; endpoints: { interface: string; region?: string; url: string }[] }[] = (JSON.parse(auth.text) as { token?: { catalog?: [] } }).token?.catalog ?? [];
    const endpoint = catalog
        .find((service) => service.type === "compute")
        ?.endpoints.find((e) => e.interface === "public" && (!api.region || e.region === api.region));
    if (!endpoint) throw new Error(`Keystone's catalog has no public compute endpoint${api.region ? ` in region ${api.region}` : ""}`);
    const server = await request(`${endpoint.url.replace(/\/+$/, "")}/servers/${encodeURIComponent(serverId)}`, { headers: { "x-auth-token": token, accept: "application/json" }, ca: api.caCertificate });
    if (server.status !== 200) throw failure(`Nova could not show server ${serverId}`, server);
    const host = (JSON.parse(server.text) as { server?: Record<string, unknown> }).server?.["OS-EXT-SRV-ATTR:host"];
    if (typeof host !== "string" || host === "") {
        throw new Error(`Nova did not show OS-EXT-SRV-ATTR:host for server ${serverId}: the stack's OpenStack user needs the admin role (or a policy that shows it)`);
    }
    return host;
}
