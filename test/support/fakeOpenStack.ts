/**
 * A stand-in for the two OpenStack APIs the pod-affinity labels read (the real ones cannot run here):
 * Keystone v3 password authentication with a service catalog, and Nova's server show with the admin-only
 * `OS-EXT-SRV-ATTR:host`. Listens on loopback only.
 */
import { randomBytes } from "node:crypto";
import * as http from "node:http";
import { AddressInfo } from "node:net";
import { ComputeApi } from "../../providers/kubernetes/computeHost";

export class FakeOpenStack {
    /** Compute host per server id; unknown servers are on `compute-default`. */
    readonly hosts = new Map<string, string>();
    readonly credentials: Required<Pick<ComputeApi, "authUrl" | "username" | "password" | "projectName" | "userDomainName" | "projectDomainName" | "region">>;
    requests = 0;
    private readonly token = randomBytes(16).toString("hex");

    private constructor(
        private readonly server: http.Server,
        port: number,
        password: string,
    ) {
        this.credentials = { authUrl: `http://127.0.0.1:${port}/identity`, username: "admin", password, projectName: "admin", userDomainName: "Default", projectDomainName: "Default", region: "RegionOne" };
    }

    static async start(): Promise<FakeOpenStack> {
        const password = `os-${randomBytes(9).toString("base64url")}`;
        let fake: FakeOpenStack | undefined;
        const server = http.createServer((req, res) => fake!.handle(req, res));
        await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
        fake = new FakeOpenStack(server, (server.address() as AddressInfo).port, password);
        return fake;
    }

    stop(): Promise<void> {
        return new Promise((resolve) => this.server.close(() => resolve()));
    }

    private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
        let body = "";
        req.on("data", (d) => (body += d));
        req.on("end", () => {
            this.requests++;
            const reply = (status: number, json: unknown, headers: Record<string, string> = {}) => {
                res.writeHead(status, { "content-type": "application/json", ...headers });
                res.end(JSON.stringify(json));
            };
            const base = this.credentials.authUrl.replace("/identity", "");
            if (req.method === "POST" && req.url === "/identity/v3/auth/tokens") {
                const user = JSON.parse(body || "{}").auth?.identity?.password?.user;
                if (user?.name !== this.credentials.username || user?.password !== this.credentials.password) return reply(401, { error: { code: 401, message: "The request you have made requires authentication." } });
                return reply(
                    201,
                    { token: { catalog: [{ type: "compute", endpoints: [{ interface: "public", region: "RegionOne", url: `${base}/compute/v2.1` }] }] } },
                    { "x-subject-token": this.token },
                );
            }
            const show = /^\/compute\/v2\.1\/servers\/([^/]+)$/.exec(req.url ?? "");
            if (req.method === "GET" && show) {
                if (req.headers["x-auth-token"] !== this.token) return reply(401, { error: { code: 401 } });
                const id = decodeURIComponent(show[1]);
                return reply(200, { server: { id, status: "ACTIVE", "OS-EXT-SRV-ATTR:host": this.hosts.get(id) ?? "compute-default" } });
            }
            reply(404, { error: { code: 404, message: `no route ${req.method} ${req.url}` } });
        });
    }
}
