import { strict as assert } from "node:assert";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import { passwordLoginCloudConfig } from "../components/server";
import { attemptInside, useLab } from "./support/labSuite";
import { LabOpenStackApi } from "./support/openstackApi/server";

const run = promisify(execFile);

/**
 * The lab OpenStack API (test/support/openstackApi/) driven by a real client, Debian's `openstack` (python3-
 * openstackclient 6.0 with novaclient, cinderclient and openstacksdk): Keystone, Neutron ports holding lab
 * addresses, Nova servers that are lab hosts (power, volumes, server groups over 2 compute hosts), Cinder
 * volumes that are lab volumes, Glance's image by name.
 */
describe("lab OpenStack API: the real openstack client against servers that are lab hosts", function () {
    this.timeout(300_000);
    const userPassword = `pw-${randomBytes(9).toString("base64url")}`;
    let api: LabOpenStackApi | undefined;
    const suite = useLab([], { secrets: () => [userPassword, ...(api ? [api.credentials.password] : [])] });
    let dir = "";
    const state: { portId?: string; serverId?: string; volumeId?: string; address?: string } = {};

    before(async function () {
        this.timeout(120_000);
        try {
            await run("openstack", ["--version"]);
        } catch {
            if (process.env.CI) assert.fail("the openstack client is missing (apt-get install python3-openstackclient)");
            this.skip();
        }
        api = await LabOpenStackApi.start(suite.lab, { cluster: "osapi", computeHosts: 2 });
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "osapi-"));
    });
    after(async () => {
        await api?.stop();
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    const env = (extra: Record<string, string> = {}) => ({ ...process.env, ...api!.env(), ...extra });
    /** `openstack ARGS -f json`, parsed. */
    const openstack = async (...args: string[]): Promise<any> => {
        const { stdout } = await run("openstack", [...args, "-f", "json"], { env: env(), maxBuffer: 16 << 20 });
        return JSON.parse(stdout);
    };
    /** `openstack ARGS` that must fail: its standard error. */
    const refused = async (args: string[], extra: Record<string, string> = {}): Promise<string> => {
        try {
            await run("openstack", args, { env: env(extra) });
        } catch (e) {
            const stderr = String((e as { stderr?: string }).stderr ?? "");
            suite.log(stderr);
            return stderr;
        }
        return assert.fail(`openstack ${args.join(" ")} succeeded`);
    };
    const until = async <T>(what: string, probe: () => Promise<T>, ok: (value: T) => boolean, seconds = 120): Promise<T> => {
        const deadline = Date.now() + seconds * 1000;
        for (;;) {
            const value = await probe();
            if (ok(value)) return value;
            if (Date.now() > deadline) assert.fail(`${what}: still ${JSON.stringify(value)}`);
            await new Promise((r) => setTimeout(r, 1000));
        }
    };
    /** Whether sshd answers at address:22 with its banner. */
    const sshAnswers = (address: string) =>
        new Promise<boolean>((resolve) => {
            const socket = net.connect({ host: address, port: 22, timeout: 3000 });
            socket.once("data", (d) => {
                socket.destroy();
                resolve(d.toString().startsWith("SSH-2.0"));
            });
            socket.once("error", () => resolve(false));
            socket.once("timeout", () => {
                socket.destroy();
                resolve(false);
            });
        });
    /** A raw call with a token of the API's, for what the client checks before it sends (an unknown flavor id). */
    const call = async (method: string, urlPath: string, body?: unknown) => {
        const auth = await fetch(api!.authUrl + "/auth/tokens", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ auth: { identity: { methods: ["password"], password: { user: { name: api!.credentials.username, domain: { name: "Default" }, password: api!.credentials.password } } }, scope: { project: { name: api!.credentials.projectName, domain: { name: "Default" } } } } }),
        });
        const token = auth.headers.get("x-subject-token")!;
        const res = await fetch(api!.authUrl.replace("/identity/v3", urlPath), { method, headers: { "x-auth-token": token, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
        return { status: res.status, body: (await res.json()) as any };
    };

    it("issues a token with a catalog; a wrong password gets Keystone's 401 and is never shown", async () => {
        const token = await openstack("token", "issue");
        assert.ok(token.id && token.project_id && token.user_id);
        const catalog = await openstack("catalog", "list");
        assert.deepEqual(catalog.map((c: { Type: string }) => c.Type).sort(), ["block-storage", "compute", "identity", "image", "network", "volumev3"]);
        const wrong = `wrong-${randomBytes(6).toString("hex")}`;
        const stderr = await refused(["token", "issue"], { OS_PASSWORD: wrong });
        assert.match(stderr, /The request you have made requires authentication.*HTTP 401/);
        assert.ok(!stderr.includes(wrong) && !stderr.includes(api!.credentials.password));
    });

    it("a port takes the fixed IP it asks for; the same IP again is 409, one outside the subnet 400, an unknown network 404", async () => {
        state.address = `${suite.lab.subnet}.30`;
        const port = await openstack("port", "create", "--network", api!.network.id, "--fixed-ip", `subnet=${api!.network.subnetId},ip-address=${state.address}`, "vm1-port");
        state.portId = port.id;
        assert.deepEqual(port.fixed_ips, [{ subnet_id: api!.network.subnetId, ip_address: state.address }]);
        assert.equal(port.status, "DOWN");
        assert.match(await refused(["port", "create", "--network", api!.network.id, "--fixed-ip", `subnet=${api!.network.subnetId},ip-address=${state.address}`, "again"]), new RegExp(`409.*IP address ${state.address.replace(/\./g, "\\.")} already allocated in subnet`));
        assert.match(await refused(["port", "create", "--network", api!.network.id, "--fixed-ip", `subnet=${api!.network.subnetId},ip-address=10.99.0.5`, "outside"]), /400.*IP address 10\.99\.0\.5 is not a valid IP for the specified subnet/);
        const unknown = await call("POST", "/network/v2.0/ports", { port: { network_id: "6d3f1a5e-0000-4000-8000-000000000000" } });
        assert.deepEqual(unknown, { status: 404, body: { NeutronError: { type: "NetworkNotFound", message: "Network 6d3f1a5e-0000-4000-8000-000000000000 could not be found.", detail: "" } } });
    });

    it("a server on the port (flavor and image by name, cloud-config user data) becomes ACTIVE, a lab host at the port's address", async () => {
        const userData = path.join(dir, "user-data");
        fs.writeFileSync(userData, passwordLoginCloudConfig("alice", userPassword));
        const server = await openstack("server", "create", "--flavor", api!.flavor.name, "--image", api!.image.name, "--port", state.portId!, "--user-data", userData, "--wait", "vm1");
        state.serverId = server.id;
        assert.equal(server.status, "ACTIVE");
        assert.deepEqual(server.addresses, { "lab-net": [state.address] });
        assert.ok(await sshAnswers(state.address!), "sshd answers at the port's address");
        assert.match(await suite.lab.inside("vm1", "ip -4 -o addr show dev eth0"), new RegExp(`${state.address!.replace(/\./g, "\\.")}/24`));
        const alice = await attemptInside(suite.lab, "vm1", "id -un alice && passwd -S alice | cut -d' ' -f2");
        assert.equal(alice.out, "alice\nP\n", "cloud-init's user with a usable password");
        const shown = await openstack("server", "show", "vm1");
        assert.ok(["compute-1", "compute-2"].includes(shown["OS-EXT-SRV-ATTR:host"]));
        const port = await openstack("port", "show", state.portId!);
        assert.deepEqual([port.status, port.device_id], ["ACTIVE", state.serverId]);
        assert.deepEqual(api!.servers().find((s) => s.id === state.serverId), { id: state.serverId, name: "vm1", status: "ACTIVE", address: state.address, computeHost: shown["OS-EXT-SRV-ATTR:host"] });
    });

    it("server stop → SHUTOFF with sshd gone; start → ACTIVE with sshd back", async () => {
        await run("openstack", ["server", "stop", "vm1"], { env: env() });
        await until("stop", async () => (await openstack("server", "show", "vm1")).status, (s) => s === "SHUTOFF");
        assert.equal(await sshAnswers(state.address!), false);
        assert.match(await refused(["server", "stop", "vm1"]), /Cannot 'stop' instance .* while it is in vm_state stopped.*HTTP 409/);
        await run("openstack", ["server", "start", "vm1"], { env: env() });
        await until("start", async () => (await openstack("server", "show", "vm1")).status, (s) => s === "ACTIVE");
        assert.ok(await sshAnswers(state.address!));
    });

    it("a volume becomes available, in-use once attached (its disk in the host by id), refused deletion while attached, then detached and deleted", async () => {
        const volume = await openstack("volume", "create", "--size", "1", "vol1");
        state.volumeId = volume.id;
        await until("volume", async () => (await openstack("volume", "show", "vol1")).status, (s) => s === "available");
        await run("openstack", ["server", "add", "volume", "vm1", "vol1"], { env: env() });
        const inUse = await until("attach", async () => openstack("volume", "show", "vol1"), (v) => v.status === "in-use");
        assert.equal(inUse.attachments[0].server_id, state.serverId);
        const byId = `virtio-${state.volumeId!.slice(0, 20)}`;
        assert.match(await suite.lab.inside("vm1", "ls /dev/disk/by-id/"), new RegExp(byId));
        assert.equal(await suite.lab.inside("vm1", `readlink -f /dev/disk/by-id/${byId}`), `${inUse.attachments[0].device}\n`);
        assert.match(
            await refused(["volume", "delete", "vol1"]),
            /Invalid volume: Volume status must be available or error or error_restoring or error_extending or error_managing and must not be migrating, attached, belong to a group, have snapshots, awaiting a transfer, or be disassociated from snapshots after volume transfer\. \(HTTP 400\)/,
        );
        await run("openstack", ["server", "remove", "volume", "vm1", "vol1"], { env: env() });
        await until("detach", async () => (await openstack("volume", "show", "vol1")).status, (s) => s === "available");
        assert.doesNotMatch(await suite.lab.inside("vm1", "ls /dev/disk/by-id/ || true"), new RegExp(byId));
        await run("openstack", ["volume", "delete", "vol1"], { env: env() });
        await until("volume delete", async () => (await openstack("volume", "list")).length, (n) => n === 0);
        assert.deepEqual(suite.lab.volumeIds(), []);
    });

    it("server delete: the host is gone, the port keeps its address, unbound", async () => {
        await run("openstack", ["server", "delete", "--wait", "vm1"], { env: env() });
        assert.ok(!suite.lab.hostNames().includes("vm1"));
        assert.equal(await sshAnswers(state.address!), false);
        const port = await openstack("port", "show", state.portId!);
        assert.deepEqual([port.fixed_ips[0].ip_address, port.status, port.device_id], [state.address, "DOWN", ""]);
        assert.match(await refused(["server", "show", state.serverId!]), /No server with a name or ID/);
    });

    it("an unknown flavor is refused: by the client after Nova's 404s, and by Nova's create with its own 400", async () => {
        assert.match(await refused(["server", "create", "--flavor", "no-such-flavor", "--image", api!.image.name, "--port", state.portId!, "vm2"]), /No flavor with a name or ID of 'no-such-flavor' exists/);
        const created = await call("POST", "/compute/v2.1/servers", { server: { name: "vm2", flavorRef: "no-such-flavor", imageRef: api!.image.id, networks: [{ port: state.portId }] } });
        assert.deepEqual(created, { status: 400, body: { badRequest: { code: 400, message: "Invalid flavorRef provided." } } });
        const image = await call("POST", "/compute/v2.1/servers", { server: { name: "vm2", flavorRef: api!.flavor.id, imageRef: "no-such-image", networks: [{ port: state.portId }] } });
        assert.deepEqual(image, { status: 400, body: { badRequest: { code: 400, message: "Can not find requested image" } } });
    });

    it("anti-affinity over 2 compute hosts: two members on different hosts, the third ERROR 'No valid host was found'", async () => {
        const group = await openstack("server", "group", "create", "--policy", "anti-affinity", "spread");
        for (const name of ["aa-0", "aa-1", "aa-2"]) {
            await openstack("server", "create", "--flavor", api!.flavor.name, "--image", api!.image.name, "--nic", `net-id=${api!.network.id}`, "--hint", `group=${group.id}`, name);
        }
        const final = (s: { status: string }) => s.status === "ACTIVE" || s.status === "ERROR";
        const shown: any[] = [];
        for (const name of ["aa-0", "aa-1", "aa-2"]) shown.push(await until(name, async () => openstack("server", "show", name), final));
        assert.deepEqual(shown.map((s) => s.status), ["ACTIVE", "ACTIVE", "ERROR"]);
        assert.deepEqual(shown.slice(0, 2).map((s) => s["OS-EXT-SRV-ATTR:host"]).sort(), ["compute-1", "compute-2"]);
        assert.match(shown[2].fault.message, /^No valid host was found/);
        assert.equal(shown[2]["OS-EXT-SRV-ATTR:host"], null);
        assert.deepEqual((await openstack("server", "group", "show", "spread")).members.length, 3);
        assert.deepEqual(suite.lab.hostNames().sort(), ["aa-0", "aa-1"]);
        await run("openstack", ["server", "delete", "--wait", "aa-0", "aa-1", "aa-2"], { env: env() });
        assert.deepEqual(suite.lab.hostNames(), []);
        assert.deepEqual((await openstack("server", "group", "show", "spread")).members, []);
    });

    it("an injected fault answers the next matching call once; calls are recorded without bodies", async () => {
        api!.failNext("GET", /\/servers\/detail$/, 503, { computeFault: { code: 503, message: "injected" } });
        assert.match(await refused(["server", "list"]), /injected.*HTTP 503/);
        assert.deepEqual(await openstack("server", "list"), []);
        const calls = api!.calls();
        assert.ok(calls.some((c) => c.method === "GET" && c.path.startsWith("/compute/v2.1/servers/detail") && c.status === 503));
        assert.ok(calls.some((c) => c.method === "POST" && c.path === "/identity/v3/auth/tokens" && c.status === 401));
        assert.ok(!JSON.stringify(calls).includes(api!.credentials.password));
    });
});
