import { strict as assert } from "node:assert";
import { execFile } from "node:child_process";
import { createHash, generateKeyPairSync, randomBytes } from "node:crypto";
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
        if (!suite.lab) this.skip();
        api = await LabOpenStackApi.start(suite.lab, { cluster: "osapi", computeHosts: 2 });
        // Before the lab stops (useLab's own after hook runs first): the API waits for its work on the hosts.
        suite.onTeardown(() => api?.stop());
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "osapi-"));
    });
    after(() => {
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
        assert.deepEqual(api!.servers().find((s) => s.id === state.serverId), { id: state.serverId, name: "vm1", status: "ACTIVE", address: state.address, computeHost: shown["OS-EXT-SRV-ATTR:host"], availabilityZone: "nova" });
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

    it("server migrate --live-migration --host (2.30): the server moves to the other compute host and keeps its host and address; its own host or an unknown one is 400", async () => {
        const migrate = ["--os-compute-api-version", "2.30", "server", "migrate", "--live-migration"];
        const from = (await openstack("server", "show", "vm1"))["OS-EXT-SRV-ATTR:host"];
        const to = from === "compute-1" ? "compute-2" : "compute-1";
        assert.match(await refused([...migrate, "--host", from, "vm1"]), /Unable to migrate instance \(.*\) to current host \(compute-\d\)\. \(HTTP 400\)/);
        assert.match(await refused([...migrate, "--host", "compute-9", "vm1"]), /Compute host compute-9 could not be found\. \(HTTP 400\)/);
        await run("openstack", [...migrate, "--host", to, "--wait", "vm1"], { env: env() });
        const shown = await openstack("server", "show", "vm1");
        assert.deepEqual([shown.status, shown["OS-EXT-SRV-ATTR:host"], shown["OS-EXT-SRV-ATTR:hypervisor_hostname"]], ["ACTIVE", to, to]);
        assert.ok(await sshAnswers(state.address!), "the same address answers");
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

    it("a second tenant network, lab-net-2, on its own /25: a server on it (--nic net-id) gets an address of its pool and is reached from lab-net (one L2 segment in the lab); the other subnet's address or subnet on its port is 400", async () => {
        const [net, other] = [api!.otherNetwork, api!.network];
        const subnets = Object.fromEntries((await openstack("subnet", "list", "--long")).map((s: any) => [s.ID, [s.Network, s.Subnet, s["Allocation Pools"]]]));
        const prefix = suite.lab.subnet;
        assert.deepEqual(subnets[other.subnetId], [other.id, `${prefix}.0/25`, [{ start: `${prefix}.10`, end: `${prefix}.126` }]]);
        assert.deepEqual(subnets[net.subnetId], [net.id, `${prefix}.128/25`, [{ start: `${prefix}.130`, end: `${prefix}.249` }]]);
        assert.match(await refused(["port", "create", "--network", net.id, "--fixed-ip", `ip-address=${prefix}.31`, "wrong-half"]), /400.*IP address .*\.31 is not a valid IP for any of the subnets on the specified network/);
        assert.match(await refused(["port", "create", "--network", net.id, "--fixed-ip", `subnet=${other.subnetId}`, "wrong-subnet"]), new RegExp(`400.*Failed to create port on network ${other.id}, because fixed_ips included invalid subnet ${other.subnetId}`));
        const server = await openstack("server", "create", "--flavor", api!.flavor.name, "--image", api!.image.name, "--nic", `net-id=${net.id}`, "--wait", "vm2");
        const [address] = server.addresses["lab-net-2"];
        assert.ok(Number(address.split(".").pop()) >= 130, address);
        assert.equal((await attemptInside(suite.lab, "vm1", `timeout 5 bash -c '</dev/tcp/${address}/22' && echo reached`)).out, "reached\n");
        await run("openstack", ["server", "delete", "--wait", "vm2"], { env: env() });
        assert.ok(!suite.lab.hostNames().includes("vm2"));
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

    it("floating IPs: an address of the public pool, kept when associated through router1; a second one on the port 409; no router interface 404", async () => {
        const port = await openstack("port", "create", "--network", api!.network.id, "fip-port");
        const fixed = port.fixed_ips[0].ip_address;
        const fip1 = await openstack("floating", "ip", "create", "--port", port.id, "public");
        assert.match(fip1.floating_ip_address, /^172\.24\.4\.\d+$/, "Neutron's address from the pool, not the port's (no NAT in the lab)");
        assert.deepEqual([fip1.fixed_ip_address, fip1.port_id, fip1.router_id], [fixed, port.id, (await openstack("router", "show", "router1")).id]);
        const fip2 = await openstack("floating", "ip", "create", "public");
        assert.match(await refused(["floating", "ip", "set", "--port", port.id, fip2.id]), new RegExp(`409.*Cannot associate floating IP ${fip2.floating_ip_address.replace(/\./g, "\\.")} \\(${fip2.id}\\) with port ${port.id} using fixed IP ${fixed.replace(/\./g, "\\.")}, as that fixed IP already has a floating IP on external network`));
        assert.match(await refused(["router", "remove", "subnet", "router1", api!.network.subnetId]), /409.*Router interface for subnet .* cannot be deleted, as it is required by one or more floating IPs/);
        await run("openstack", ["floating", "ip", "unset", "--port", fip1.id], { env: env() });
        await run("openstack", ["router", "remove", "subnet", "router1", api!.network.subnetId], { env: env() });
        assert.match(await refused(["floating", "ip", "set", "--port", port.id, fip1.id]), new RegExp(`404.*External network ${fip1.floating_network_id} is not reachable from subnet ${api!.network.subnetId}\\.  Therefore, cannot associate Port ${port.id} with a Floating IP\\.`));
        const unreachable = await call("POST", "/network/v2.0/floatingips", { floatingip: { floating_network_id: fip1.floating_network_id, port_id: port.id } });
        assert.equal(unreachable.body.NeutronError.type, "ExternalGatewayForFloatingIPNotFound");
        await run("openstack", ["router", "add", "subnet", "router1", api!.network.subnetId], { env: env() });
        await run("openstack", ["floating", "ip", "set", "--port", port.id, fip1.id], { env: env() });
        const shown = await openstack("floating", "ip", "show", fip1.id);
        assert.deepEqual([shown.floating_ip_address, shown.fixed_ip_address], [fip1.floating_ip_address, fixed], "the address Neutron allocated, never the port's");
        await run("openstack", ["floating", "ip", "delete", fip1.id, fip2.id], { env: env() });
        await run("openstack", ["port", "delete", port.id], { env: env() });
    });

    it("port security off: security groups 400, address pairs 409 (create and update), disabling it under a group 409", async () => {
        const net = api!.network.id;
        assert.match(await refused(["port", "create", "--network", net, "--disable-port-security", "--security-group", "default", "psec"]), /400.*Port security must be enabled and port must have an IP address in order to use security groups\./);
        assert.match(await refused(["port", "create", "--network", net, "--disable-port-security", "--allowed-address", "ip-address=10.1.0.5", "psec"]), /409.*Port Security must be enabled in order to have allowed address pairs on a port\./);
        const port = await openstack("port", "create", "--network", net, "psec");
        assert.match(await refused(["port", "set", "--disable-port-security", port.id]), /409.*Port has security group associated\. Cannot disable port security or IP address until security group is removed\./);
        await run("openstack", ["port", "set", "--disable-port-security", "--no-security-group", port.id], { env: env() });
        assert.match(await refused(["port", "set", "--allowed-address", "ip-address=10.1.0.5", port.id]), /409.*Port Security must be enabled in order to have allowed address pairs on a port\./);
        assert.deepEqual((await openstack("port", "list", "--name", "psec")).length, 1, "the refused ports were never made");
        await run("openstack", ["port", "delete", port.id], { env: env() });
    });

    it("allowed address pairs: an address or a CIDR (Neutron's 400 otherwise), no pair twice in a request", async () => {
        const create = (...pairs: string[]) => ["port", "create", "--network", api!.network.id, ...pairs.flatMap((p) => ["--allowed-address", `ip-address=${p}`]), "pairs"];
        assert.match(await refused(create("not-an-ip")), /400.*'not-an-ip' is not a valid IP address/);
        assert.match(await refused(create("10.1.0.0/33")), /400.*'10\.1\.0\.0\/33' is not a valid IP subnet/);
        assert.match(await refused(create("10.1.0.5", "10.1.0.5")), /400.*Request contains duplicate address pair: mac_address None ip_address 10\.1\.0\.5\./);
        const port = await openstack("port", "create", "--network", api!.network.id, "--allowed-address", "ip-address=10.1.0.0/24", "--allowed-address", "ip-address=10.1.0.5", "pairs");
        assert.deepEqual(port.allowed_address_pairs.map((p: { ip_address: string; mac_address: string }) => [p.ip_address, p.mac_address]), [["10.1.0.0/24", port.mac_address], ["10.1.0.5", port.mac_address]]);
        await run("openstack", ["port", "delete", port.id], { env: env() });
    });

    it("zones and volume types: an unknown zone is Nova's and Cinder's 400, an unknown type Cinder's 404; the defaults work", async () => {
        assert.deepEqual([api!.zones, api!.volumeTypes], [["nova", "az-1", "az-2"], ["__DEFAULT__", "lvmdriver-1"]]);
        assert.match(await refused(["server", "create", "--flavor", api!.flavor.name, "--image", api!.image.name, "--nic", `net-id=${api!.network.id}`, "--availability-zone", "nowhere", "vm-az"]), /The requested availability zone is not available \(HTTP 400\)/);
        assert.match(await refused(["volume", "create", "--size", "1", "--availability-zone", "nowhere", "vol-az"]), /Availability zone 'nowhere' is invalid\. \(HTTP 400\)/);
        const project = (await openstack("token", "issue")).project_id;
        assert.deepEqual(await call("POST", `/volume/v3/${project}/volumes`, { volume: { size: 1, volume_type: "gold" } }), { status: 404, body: { itemNotFound: { code: 404, message: "Volume type with name gold could not be found." } } });
        const volume = await openstack("volume", "create", "--size", "1", "--availability-zone", "az-2", "--type", "lvmdriver-1", "vol-az");
        assert.deepEqual([volume.availability_zone, volume.type], ["az-2", "lvmdriver-1"]);
        await until("volume", async () => (await openstack("volume", "show", "vol-az")).status, (s) => s === "available");
        await run("openstack", ["volume", "delete", "vol-az"], { env: env() });
        await until("volume delete", async () => (await openstack("volume", "list")).length, (n) => n === 0);
        assert.deepEqual(await openstack("server", "list"), []);
    });

    it("security group rules: Neutron's 400 for a bad CIDR, a CIDR or protocol of the other ethertype, a port above 65535; 0.0.0.0/0 and ::/0 are no prefix", async () => {
        const group = await openstack("security", "group", "create", "rules");
        const rule = (...args: string[]) => ["security", "group", "rule", "create", ...args, "rules"];
        assert.match(await refused(rule("--remote-ip", "not-a-cidr")), /400.*Invalid CIDR not-a-cidr given as IP prefix\./);
        assert.match(await refused(rule("--ethertype", "IPv4", "--remote-ip", "2001:db8::/64")), /400.*Conflicting value ethertype IPv4 for CIDR 2001:db8::\/64/);
        assert.match(await refused(rule("--ethertype", "IPv4", "--protocol", "ipv6-icmp")), /400.*Invalid ethertype IPv4 for protocol ipv6-icmp\./);
        assert.match(await refused(rule("--protocol", "tcp", "--dst-port", "22:70000")), /400.*Invalid value for port 70000\./);
        const first = await openstack(...rule("--protocol", "tcp", "--dst-port", "22", "--remote-ip", "0.0.0.0/0"));
        const again = await call("POST", "/network/v2.0/security-group-rules", { security_group_rule: { security_group_id: group.id, direction: "ingress", ethertype: "IPv4", protocol: "tcp", port_range_min: 22, port_range_max: 22 } });
        assert.deepEqual(again, { status: 409, body: { NeutronError: { type: "SecurityGroupRuleExists", message: `Security group rule already exists. Rule id is ${first.id}.`, detail: "" } } });
        const v6 = await call("POST", "/network/v2.0/security-group-rules", { security_group_rule: { security_group_id: group.id, direction: "ingress", ethertype: "IPv6", protocol: "tcp", port_range_min: 22, port_range_max: 22 } });
        assert.equal(v6.status, 201);
        const v6Any = await call("POST", "/network/v2.0/security-group-rules", { security_group_rule: { security_group_id: group.id, direction: "ingress", ethertype: "IPv6", protocol: "tcp", port_range_min: 22, port_range_max: 22, remote_ip_prefix: "::/0" } });
        assert.deepEqual([v6Any.status, v6Any.body.NeutronError?.message], [409, `Security group rule already exists. Rule id is ${v6.body.security_group_rule.id}.`]);
        await run("openstack", ["security", "group", "delete", "rules"], { env: env() });
    });

    it("keypairs: a name outside [a-zA-Z0-9 _-] and a public key that does not parse are Nova's 400", async () => {
        const raw = generateKeyPairSync("ed25519").publicKey.export({ format: "der", type: "spki" }).subarray(-32);
        const sshString = (b: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, b.length]), b]);
        const blob = (type: string) => Buffer.concat([sshString(Buffer.from(type)), sshString(raw)]).toString("base64");
        const keyFile = (line: string) => {
            const file = path.join(dir, `key-${randomBytes(4).toString("hex")}.pub`);
            fs.writeFileSync(file, `${line}\n`);
            return file;
        };
        const good = keyFile(`ssh-ed25519 ${blob("ssh-ed25519")} lab@test`);
        assert.match(await refused(["keypair", "create", "--public-key", good, "lab.key"]), /Keypair data is invalid: Keypair name contains unsafe characters/);
        for (const bad of [`ssh-rsa ${blob("ssh-ed25519")}`, `ssh-ed25519 ${blob("ssh-ed25519").slice(0, -8)}`, "ssh-ed25519 not*base64", `ssh-foo ${blob("ssh-foo")}`]) {
            assert.match(await refused(["keypair", "create", "--public-key", keyFile(bad), "lab-key"]), /Keypair data is invalid: failed to generate fingerprint/, bad);
        }
        const created = await openstack("keypair", "create", "--public-key", good, "lab key_1-x");
        assert.equal(created.fingerprint, createHash("md5").update(Buffer.from(blob("ssh-ed25519"), "base64")).digest("hex").replace(/(..)(?!$)/g, "$1:"));
        await run("openstack", ["keypair", "delete", "lab key_1-x"], { env: env() });
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
