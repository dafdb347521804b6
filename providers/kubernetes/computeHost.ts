/**
 * Which compute host a server runs on: Nova's `OS-EXT-SRV-ATTR:host`, read through the OpenStack APIs
 * (Keystone v3 password authentication, then the compute endpoint of the catalog). Nova shows the
 * attribute to admins by default. Serialized with the label provider: node built-ins only (global fetch).
 */

/** OpenStack credentials, as the stack's `openstack:*` configuration or OS_* variables give them. */
export interface ComputeApi {
    authUrl: string;
    username: string;
    password: string;
    projectName: string;
    userDomainName: string;
    projectDomainName: string;
    region?: string;
}

const REQUEST_TIMEOUT_MS = 30_000;

async function failure(what: string, response: Response): Promise<Error> {
    const body = (await response.text().catch(() => "")).slice(0, 300);
    return new Error(`${what}: HTTP ${response.status}${body ? ` ${body}` : ""}`);
}

export async function computeHostOf(api: ComputeApi, serverId: string): Promise<string> {
    const identity = api.authUrl.replace(/\/+$/, "").replace(/(\/v3)?$/, "/v3");
    const auth = await fetch(`${identity}/auth/tokens`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        body: JSON.stringify({
            auth: {
                identity: { methods: ["password"], password: { user: { name: api.username, domain: { name: api.userDomainName }, password: api.password } } },
                scope: { project: { name: api.projectName, domain: { name: api.projectDomainName } } },
            },
        }),
    });
    if (auth.status !== 201) throw await failure(`Keystone at ${identity} refused the stack's credentials`, auth);
    const token = auth.headers.get("x-subject-token") ?? "";
    const catalog: { type: string; endpoints: { interface: string; region?: string; url: string }[] }[] = ((await auth.json()) as { token?: { catalog?: [] } }).token?.catalog ?? [];
    const endpoint = catalog
        .find((service) => service.type === "compute")
        ?.endpoints.find((e) => e.interface === "public" && (!api.region || e.region === api.region));
    if (!endpoint) throw new Error(`Keystone's catalog has no public compute endpoint${api.region ? ` in region ${api.region}` : ""}`);
    const server = await fetch(`${endpoint.url.replace(/\/+$/, "")}/servers/${encodeURIComponent(serverId)}`, {
        headers: { "x-auth-token": token, accept: "application/json" },
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    if (server.status !== 200) throw await failure(`Nova could not show server ${serverId}`, server);
    const host = ((await server.json()) as { server?: Record<string, unknown> }).server?.["OS-EXT-SRV-ATTR:host"];
    if (typeof host !== "string" || host === "") {
        throw new Error(`Nova did not show OS-EXT-SRV-ATTR:host for server ${serverId}: the stack's OpenStack user needs the admin role (or a policy that shows it)`);
    }
    return host;
}
