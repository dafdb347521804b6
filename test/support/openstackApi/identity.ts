/**
 * Keystone v3: the version documents and password (and token) authentication with a project scope, answering
 * with the token in X-Subject-Token and a service catalog whose every endpoint is under this one loopback port.
 * What the clients send: gophercloud v1.8.0 openstack/identity/v3/tokens (requests.go, results.go) and
 * keystoneauth1's v3 password plugin; the shapes from the api-ref
 * (https://docs.openstack.org/api-ref/identity/v3/#password-authentication-with-scoped-authorization).
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import { ApiRequest, ApiReply, CloudState, isoNow, keystoneError, Route } from "./state";

/** A token's lifetime (Keystone's default [token] expiration is one hour). */
const TOKEN_SECONDS = 3600;

const unauthorized = () => keystoneError(401, "Unauthorized", "The request you have made requires authentication.");

function sameSecret(a: string, b: string): boolean {
    const x = Buffer.from(a);
    const y = Buffer.from(b);
    return x.length === y.length && timingSafeEqual(x, y);
}

export function identityRoutes(state: CloudState, base: () => string): Route[] {
    const versionDoc = () => ({
        id: "v3.14",
        status: "stable",
        updated: "2020-04-07T00:00:00Z",
        links: [{ rel: "self", href: `${base()}/identity/v3/` }],
        "media-types": [{ base: "application/json", type: "application/vnd.openstack.identity-v3+json" }],
    });

    /** The catalog (api-ref identity v3 "Service catalog and endpoints"); one region, public interface. */
    const catalog = () => {
        const entry = (type: string, name: string, url: string) => ({
            id: randomBytes(16).toString("hex"),
            type,
            name,
            endpoints: ["public", "internal"].map((iface) => ({ id: randomBytes(16).toString("hex"), interface: iface, region: state.identity.region, region_id: state.identity.region, url })),
        });
        const b = base();
        return [
            entry("identity", "keystone", `${b}/identity`),
            entry("compute", "nova", `${b}/compute/v2.1`),
            entry("network", "neutron", `${b}/network`),
            entry("volumev3", "cinderv3", `${b}/volume/v3/${state.identity.project.id}`),
            entry("block-storage", "cinder", `${b}/volume/v3/${state.identity.project.id}`),
            entry("image", "glance", `${b}/image`),
        ];
    };

    /** POST /v3/auth/tokens (api-ref identity v3 "Password authentication with scoped authorization"). */
    const issue = (req: ApiRequest): ApiReply => {
        const auth = req.body?.auth;
        const methods: string[] = auth?.identity?.methods ?? [];
        if (!Array.isArray(methods) || !methods.length) throw keystoneError(400, "Bad Request", "Invalid input for field 'identity': 'methods' is a required property");
        const { domain, project, user } = state.identity;
        const inDomain = (d: { id?: string; name?: string } | undefined) => !!d && (d.id === domain.id || d.name === domain.name);
        let authenticated = false;
        if (methods.includes("password")) {
            const u = auth.identity.password?.user ?? {};
            const named = u.id ? u.id === user.id : u.name === user.name && inDomain(u.domain);
            authenticated = named && typeof u.password === "string" && sameSecret(u.password, state.identity.password);
        } else if (methods.includes("token")) {
            const id = String(auth.identity.token?.id ?? "");
            const known = state.tokens.get(id);
            authenticated = !!known && known.expires > Date.now();
        }
        if (!authenticated) throw unauthorized();
        const scope = auth.scope?.project;
        if (scope && !(scope.id === project.id || (scope.name === project.name && inDomain(scope.domain)))) throw unauthorized();
        if (!scope) throw keystoneError(401, "Unauthorized", "The lab issues project-scoped tokens only.");

        const token = `gAAAAA${randomBytes(32).toString("base64url")}`;
        const expires = Date.now() + TOKEN_SECONDS * 1000;
        state.tokens.set(token, { expires });
        const body = {
            token: {
                methods,
                user: { domain: { ...domain }, id: user.id, name: user.name, password_expires_at: null },
                audit_ids: [randomBytes(16).toString("base64url")],
                expires_at: new Date(expires).toISOString().replace(/Z$/, "000Z"),
                issued_at: new Date().toISOString().replace(/Z$/, "000Z"),
                project: { domain: { ...domain }, id: project.id, name: project.name },
                is_domain: false,
                roles: ["admin", "member", "reader"].map((name) => ({ id: randomBytes(16).toString("hex"), name })),
                catalog: catalog(),
            },
        };
        return { status: 201, body, headers: { "x-subject-token": token } };
    };

    return [
        // GET / of the identity service: the version list (api-ref identity v3 "Versions"), 300 as Keystone answers.
        { method: "GET", path: /^\/identity\/?$/, open: true, handler: () => ({ status: 300, body: { versions: { values: [versionDoc()] } } }) },
        // GET /v3: the one version (api-ref identity v3 "Version"); keystoneauth's discovery reads it.
        { method: "GET", path: /^\/identity\/v3\/?$/, open: true, handler: () => ({ status: 200, body: { version: versionDoc() } }) },
        { method: "POST", path: /^\/identity\/v3\/auth\/tokens$/, open: true, handler: issue },
        // GET /v3/auth/tokens: validate a token (api-ref identity v3 "Validate and show information for token").
        {
            method: "GET",
            path: /^\/identity\/v3\/auth\/tokens$/,
            handler: (req) => {
                const subject = String(req.headers["x-subject-token"] ?? "");
                const known = state.tokens.get(subject);
                if (!known || known.expires < Date.now()) throw keystoneError(404, "Not Found", `Failed to validate token`);
                return { status: 200, body: { token: { expires_at: new Date(known.expires).toISOString(), issued_at: isoNow(), methods: ["password"], project: { ...state.identity.project, domain: state.identity.domain }, user: { ...state.identity.user, domain: state.identity.domain } } }, headers: { "x-subject-token": subject } };
            },
        },
    ];
}

/** Whether a request's X-Auth-Token is a token this API issued and that has not expired (keystonemiddleware). */
export function checkToken(state: CloudState, token: string | undefined): void {
    const known = token ? state.tokens.get(token) : undefined;
    if (!known || known.expires < Date.now()) throw unauthorized();
}
