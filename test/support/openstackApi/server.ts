/**
 * The lab OpenStack API: Keystone, Nova, Neutron, Cinder and Glance as one HTTP service on a loopback port,
 * backed by the lab (test/lab/lab.ts): ports hold lab addresses, servers are lab hosts, volumes are lab volumes.
 * It stands where test/support/engine/labCloud.ts stood, but for the real OpenStack provider
 * (terraform-provider-openstack v1.54.1 through pulumi-terraform-bridge, gophercloud v1.8.0) and for the real
 * `openstack` client: each handler cites the provider source or api-ref page it follows.
 *
 * This file: routing (first route whose method and path match), the token check (keystonemiddleware: 401
 * without a valid X-Auth-Token), the microversion headers (OpenStack-API-Version / X-OpenStack-Nova-API-Version
 * / X-OpenStack-Volume-API-Version, echoed on the reply; 406 outside the range, as nova/api/openstack/wsgi.py),
 * fault injection, the call record (never bodies: they carry passwords), start and stop.
 */
import { randomUUID } from "node:crypto";
import * as http from "node:http";
import { AddressInfo } from "node:net";
import * as YAML from "yaml";
import { Lab } from "../../lab/lab";
import { computeRoutes } from "./compute";
import { COMPUTE_MAX_MICROVERSION, computeResourceRoutes } from "./computeResources";
import { checkToken, identityRoutes } from "./identity";
import { imageRoutes } from "./image";
import { Lifecycle } from "./lifecycle";
import { networkRoutes } from "./network";
import { securityGroupRoutes } from "./securityGroups";
import { ApiError, ApiReply, ApiRequest, CloudOptions, CloudState, Microversion, Route } from "./state";
import { VOLUME_MAX_MICROVERSION, volumeRoutes } from "./volume";

const MAX_BODY = 1 << 20;

interface Fault {
    method: string;
    path: RegExp;
    status: number;
    body: unknown;
}

export class LabOpenStackApi {
    readonly authUrl: string;
    readonly credentials: { username: string; password: string; projectName: string; userDomainName: string; projectDomainName: string; region: string };
    /** lab-net (the seeds' network, CloudOptions.networkId) and its subnet. */
    readonly network: { id: string; subnetId: string };
    /** lab-net-2 (CloudOptions.otherNetworkId) and its subnet: another network router1 reaches. */
    readonly otherNetwork: { id: string; subnetId: string };
    readonly image: { id: string; name: string };
    readonly flavor: { id: string; name: string };
    /** Nova's and Cinder's availability zones: another one is refused (400). */
    readonly zones: readonly string[];
    /** Cinder's volume types by name: another one is refused (404). */
    readonly volumeTypes: readonly string[];
    private readonly faults: Fault[] = [];
    private readonly record: { method: string; path: string; status: number }[] = [];

    private constructor(
        private readonly server: http.Server,
        private readonly state: CloudState,
        private readonly routes: Route[],
        readonly baseUrl: string,
    ) {
        const id = state.identity;
        this.authUrl = `${baseUrl}/identity/v3`;
        this.credentials = { username: id.user.name, password: id.password, projectName: id.project.name, userDomainName: id.domain.name, projectDomainName: id.domain.name, region: id.region };
        [this.network, this.otherNetwork] = state.tenantNetworks.map((n) => ({ id: n.id, subnetId: n.subnet.id }));
        this.image = { id: state.image.id, name: state.image.name };
        this.flavor = { id: state.flavors[0].id, name: state.flavors[0].name };
        this.zones = state.zones;
        this.volumeTypes = state.volumeTypes.map((t) => t.name);
    }

    /**
     * Starts the API on 127.0.0.1 and a free port; `cluster` names the stand-ins' shared state of its servers;
     * `zones` (default nova, az-1, az-2: the lab specs' zones) and `volumeTypes` (default __DEFAULT__, lvmdriver-1) are all it accepts.
     */
    static async start(lab: Lab, options: { cluster?: string; computeHosts?: number } & CloudOptions = {}): Promise<LabOpenStackApi> {
        const state = new CloudState(lab, options.cluster ?? "openstack", options.computeHosts ?? 3, options);
        let api: LabOpenStackApi | undefined;
        const server = http.createServer((req, res) => void api!.handle(req, res));
        await new Promise<void>((resolve, reject) => {
            server.once("error", reject);
            server.listen(0, "127.0.0.1", resolve);
        });
        const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        const life = new Lifecycle(state);
        const baseOf = () => base;
        const routes = [
            ...identityRoutes(state, baseOf),
            ...computeResourceRoutes(state, baseOf),
            ...computeRoutes(state, life, baseOf),
            ...networkRoutes(state, baseOf),
            ...securityGroupRoutes(state),
            ...volumeRoutes(state, baseOf),
            ...imageRoutes(state, baseOf),
        ];
        api = new LabOpenStackApi(server, state, routes, base);
        return api;
    }

    /** OS_* variables for the `openstack` client and the provider (gophercloud reads the same names). */
    env(): Record<string, string> {
        const c = this.credentials;
        return {
            OS_AUTH_URL: this.authUrl,
            OS_USERNAME: c.username,
            OS_PASSWORD: c.password,
            OS_PROJECT_NAME: c.projectName,
            OS_USER_DOMAIN_NAME: c.userDomainName,
            OS_PROJECT_DOMAIN_NAME: c.projectDomainName,
            OS_REGION_NAME: c.region,
            OS_IDENTITY_API_VERSION: "3",
        };
    }

    /** A clouds.yaml naming `cloud`, with the same credentials. */
    cloudsYaml(cloud: string): string {
        const c = this.credentials;
        return YAML.stringify({
            clouds: {
                [cloud]: {
                    auth: { auth_url: this.authUrl, username: c.username, password: c.password, project_name: c.projectName, user_domain_name: c.userDomainName, project_domain_name: c.projectDomainName },
                    region_name: c.region,
                    interface: "public",
                    identity_api_version: 3,
                },
            },
        });
    }

    servers(): { id: string; name: string; status: string; address: string; computeHost: string; availabilityZone: string }[] {
        return [...this.state.servers.values()].map((s) => {
            const first = s.ports.map((id) => this.state.ports.get(id)).find((p) => p?.fixed_ips.length);
            return { id: s.id, name: s.name, status: s.status, address: first?.fixed_ips[0].ip_address ?? "", computeHost: s.computeHost ?? "", availabilityZone: s.availabilityZone };
        });
    }

    /** The ports: network, the server they are bound to ("" when none), first fixed IP ("" when none). */
    ports(): { id: string; networkId: string; deviceId: string; address: string }[] {
        return [...this.state.ports.values()].map((p) => ({ id: p.id, networkId: p.network_id, deviceId: p.device_id, address: p.fixed_ips[0]?.ip_address ?? "" }));
    }

    /** The server groups, each with its policy and its members' server names. */
    serverGroups(): { name: string; policy: string; members: string[] }[] {
        return [...this.state.serverGroups.values()].map((g) => ({ name: g.name, policy: g.policy, members: g.members.map((id) => this.state.servers.get(id)?.name ?? id) }));
    }

    volumes(): { id: string; name: string; status: string; attachedTo?: string }[] {
        return [...this.state.volumes.values()].map((v) => ({ id: v.id, name: v.name, status: v.status, attachedTo: v.attachment?.serverId }));
    }

    /** The next call whose method and path (without the query) match fails with `status` and `body`. */
    failNext(method: string, path: RegExp, status: number, body: unknown): void {
        this.faults.push({ method: method.toUpperCase(), path, status, body });
    }

    /** Every call so far: method, path with its query, status. */
    calls(): { method: string; path: string; status: number }[] {
        return this.record.map((c) => ({ ...c }));
    }

    /** Stops listening and waits for the work under way (builds, power actions, volume work) to end. */
    async stop(): Promise<void> {
        this.server.closeAllConnections();
        await new Promise<void>((resolve) => this.server.close(() => resolve()));
        while (this.state.pending.size) await Promise.all([...this.state.pending]);
    }

    private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
        const method = (req.method ?? "GET").toUpperCase();
        const url = new URL(req.url ?? "/", this.baseUrl);
        let reply: ApiReply;
        try {
            const raw = await readBody(req);
            reply = await this.dispatch(method, url, req.headers, raw);
        } catch (e) {
            reply = e instanceof ApiError ? { status: e.status, body: e.body } : { status: 500, body: { error: { code: 500, message: `The lab OpenStack API failed: ${(e as Error).message}` } } };
        }
        this.record.push({ method, path: url.pathname + url.search, status: reply.status });
        const headers: Record<string, string> = { "x-openstack-request-id": `req-${randomUUID()}`, ...(reply.headers ?? {}) };
        if (reply.status === 204 || reply.body === undefined) {
            res.writeHead(reply.status, headers);
            res.end();
        } else if (typeof reply.body === "string") {
            res.writeHead(reply.status, { ...headers, "content-type": "text/plain; charset=UTF-8" });
            res.end(reply.body);
        } else {
            res.writeHead(reply.status, { ...headers, "content-type": "application/json" });
            res.end(JSON.stringify(reply.body));
        }
    }

    private async dispatch(method: string, url: URL, headers: http.IncomingHttpHeaders, raw: string): Promise<ApiReply> {
        const path = url.pathname;
        const fault = this.faults.findIndex((f) => f.method === method && f.path.test(url.pathname));
        if (fault >= 0) {
            const [f] = this.faults.splice(fault, 1);
            return { status: f.status, body: f.body };
        }
        let pathMatched = false;
        for (const route of this.routes) {
            const m = route.path.exec(path);
            if (!m) continue;
            pathMatched = true;
            if (route.method !== method) continue;
            if (!route.open) checkToken(this.state, headerOf(headers, "x-auth-token"));
            const microversion = route.service ? negotiate(route.service, headers) : new Microversion(1, 0);
            let body: unknown;
            if (raw.trim()) {
                try {
                    body = JSON.parse(raw);
                } catch {
                    throw new ApiError(400, { badRequest: { code: 400, message: "Malformed request body" } });
                }
            }
            const request: ApiRequest = { method, path, params: m.slice(1), query: url.searchParams, headers, body, microversion };
            let reply: ApiReply;
            try {
                reply = await route.handler(request);
            } catch (e) {
                if (!(e instanceof ApiError)) throw e;
                reply = { status: e.status, body: e.body };
            }
            // Nova and Cinder name the microversion on every reply of the service, refusals too.
            if (route.service) reply.headers = { ...microversionHeaders(route.service, microversion), ...(reply.headers ?? {}) };
            return reply;
        }
        if (pathMatched) return { status: 405, body: { error: { code: 405, message: `The method ${method} is not allowed for this resource.` } } };
        return { status: 404, body: { error: { code: 404, message: "The resource could not be found." } } };
    }
}

function headerOf(headers: http.IncomingHttpHeaders, name: string): string | undefined {
    const value = headers[name];
    return Array.isArray(value) ? value[0] : value;
}

const RANGES = { compute: { min: "2.1", max: COMPUTE_MAX_MICROVERSION, legacy: "x-openstack-nova-api-version" }, volume: { min: "3.0", max: VOLUME_MAX_MICROVERSION, legacy: "x-openstack-volume-api-version" } };

/**
 * The microversion a request asks for (nova/api/openstack/api_version_request.py, cinder's the same): the
 * service's entry of OpenStack-API-Version, else the legacy header, else the minimum; `latest` is the maximum.
 */
function negotiate(service: "compute" | "volume", headers: http.IncomingHttpHeaders): Microversion {
    const range = RANGES[service];
    let asked: string | undefined;
    for (const part of (headerOf(headers, "openstack-api-version") ?? "").split(",")) {
        const [name, value] = part.trim().split(/\s+/);
        if (name?.toLowerCase() === service && value) asked = value;
    }
    asked ??= headerOf(headers, range.legacy);
    if (!asked) return Microversion.parse(range.min)!;
    if (asked === "latest") return Microversion.parse(range.max)!;
    const v = Microversion.parse(asked);
    const min = Microversion.parse(range.min)!;
    if (!v || !v.atLeast(range.min) || !Microversion.parse(range.max)!.atLeast(asked) || v.major !== min.major) {
        throw new ApiError(406, { computeFault: { code: 406, message: `Version ${asked} is not supported by the API. Minimum is ${range.min} and maximum is ${range.max}.` } });
    }
    return v;
}

function microversionHeaders(service: "compute" | "volume", v: Microversion): Record<string, string> {
    const legacy: Record<string, string> = service === "compute" ? { "x-openstack-nova-api-version": String(v) } : {};
    return { "openstack-api-version": `${service} ${v}`, vary: "OpenStack-API-Version", ...legacy };
}

function readBody(req: http.IncomingMessage): Promise<string> {
    return new Promise((resolve, reject) => {
        const chunks: Buffer[] = [];
        let size = 0;
        req.on("data", (chunk: Buffer) => {
            size += chunk.length;
            if (size > MAX_BODY) {
                reject(new ApiError(413, { error: { code: 413, message: "Request is too large." } }));
                req.destroy();
            } else chunks.push(chunk);
        });
        req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
        req.on("error", reject);
    });
}
