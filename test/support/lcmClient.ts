/**
 * What the LCM suites need on the client side: a subscriber's callback endpoint, whether the real
 * `openstack vnflcm` client is installed, and the seeds' request bodies for lab hosts.
 */
import * as fs from "node:fs";
import * as http from "node:http";
import { AddressInfo } from "node:net";
import * as path from "node:path";
import { strict as assert } from "node:assert";
import { execFile, spawnSync } from "node:child_process";
import { promisify } from "node:util";
import { parseRequestText } from "../../config/requestText";
import { Lab } from "../lab/lab";
import { REQUESTS_DIR } from "./fixtures";

/** A subscriber's callback endpoint on loopback: 204 to the test GET, records every notification. */
export class Callback {
    readonly received: Record<string, any>[] = [];
    /** POSTs to refuse with a 500 before accepting (a flaky subscriber). */
    failFirst = 0;
    attempts = 0;
    private constructor(
        private readonly server: http.Server,
        readonly url: string,
    ) {}
    static async start(): Promise<Callback> {
        let self: Callback | undefined;
        const server = http.createServer((req, res) => {
            let body = "";
            req.on("data", (d) => (body += d));
            req.on("end", () => {
                if (req.method === "POST") {
                    self!.attempts++;
                    if (self!.failFirst > 0) {
                        self!.failFirst--;
                        res.writeHead(500).end();
                        return;
                    }
                    self!.received.push(JSON.parse(body));
                }
                res.writeHead(204).end();
            });
        });
        await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
        self = new Callback(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}/notifications`);
        return self;
    }
    /** Waits until `ready(received)` holds (deliveries are asynchronous to the state the API shows); false after `timeoutMs`. */
    async until(ready: (received: Record<string, any>[]) => boolean, timeoutMs = 10_000): Promise<boolean> {
        for (const deadline = Date.now() + timeoutMs; !ready(this.received); await new Promise((r) => setTimeout(r, 100))) {
            if (Date.now() > deadline) return false;
        }
        return true;
    }
    stop(): Promise<void> {
        return new Promise((r) => this.server.close(() => r()));
    }
}

const exec = promisify(execFile);

/** The real client against a service at `serviceUrl()` (no authentication): `openstack vnflcm ARGS`, what it printed. */
export function vnflcmClient(serviceUrl: () => string): (...args: string[]) => Promise<string> {
    const openstack = openstackClient(serviceUrl);
    return (...args) => openstack("vnflcm", ...args);
}

/** `openstack ARGS` against the service, what it printed; a failure's message has what it printed on stderr. */
export function openstackClient(serviceUrl: () => string): (...args: string[]) => Promise<string> {
    return async (...args) => (await exec("openstack", ["--os-auth-type", "none", "--os-endpoint", serviceUrl(), ...args], { timeout: 60_000 })).stdout;
}

/**
 * `openstack vnflcm op cancel --cancel-mode GRACEFUL OP` with the real client: what it printed. tackerclient
 * 1.12 prints that the request was accepted, then fails inside cliff (a ShowOne command returning nothing:
 * "cannot unpack non-iterable NoneType object").
 */
export function vnflcmCancel(serviceUrl: string, opId: string): Promise<string> {
    return exec("openstack", ["--os-auth-type", "none", "--os-endpoint", serviceUrl, "vnflcm", "op", "cancel", "--cancel-mode", "GRACEFUL", opId]).then(
        (r) => r.stdout,
        (e: { stdout: string; stderr: string }) => (assert.match(e.stderr, /cannot unpack non-iterable NoneType/), e.stdout),
    );
}

export const clientAvailable = () => spawnSync("openstack", ["--version"]).status === 0;

/**
 * A seed's request text for VMs that are lab hosts: its login passwords replaced by the lab's (the hosts'
 * `ubuntu` login), everything else (Tacker's '#' comments too) as the seed has it.
 */
export function seedText(lab: Pick<Lab, "password">, name: string): string {
    return fs.readFileSync(path.join(REQUESTS_DIR, name), "utf8").replace(/("(?:ssh_)?password"\s*:\s*)"ubuntu"/g, (_m, key) => `${key}${JSON.stringify(lab.password)}`);
}

/** A seed's InstantiateVnfRequest as `seedText` gives it, parsed. */
export function seedBody(lab: Pick<Lab, "password">, name: string, options: { withoutVim?: boolean } = {}): any {
    const body = parseRequestText(seedText(lab, name), name) as any;
    if (options.withoutVim) delete body.vimConnectionInfo;
    return body;
}
