import { strict as assert } from "node:assert";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { dockerArchive, ImageArchive, ociArchive } from "./support/ociImage";
import { registryConfig } from "../components/registryPlan";
import { attemptInside, sudoOverSsh, useLab } from "./support/labSuite";


/**
 * The lab's ground for the private-registry tests: Debian's docker-registry (Distribution 2.8.2) run by
 * Debian's own /etc/init.d/docker-registry, with TLS from a CA of the test's own and htpasswd logins; skopeo
 * pushing image archives written by test/support/ociImage.ts; the real containerd daemon behind
 * `service containerd ACTION` (test/lab/stand-ins/init.d/containerd) pulling with ctr and a hosts.toml.
 * No password is on any command line: it reaches the hosts on stdin, in files only root reads.
 */
describe("lab: a private registry (Debian's docker-registry, TLS, htpasswd) and the real containerd pulling from it", function () {
    this.timeout(120_000);
    const user = "lab-puller";
    const password = `pw-${randomBytes(12).toString("base64url")}`;
    const basic = Buffer.from(`${user}:${password}`).toString("base64");
    const suite = useLab(["registry", "node"], { secrets: () => [password, basic] });
    const registryIp = () => suite.lab.host("registry").address;
    const registry = () => `${registryIp()}:5000`;
    const certsDir = () => `/etc/containerd/certs.d/${registry()}`;
    const work = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-registry-test-"));
    let oci: ImageArchive;
    let docker: ImageArchive;

    after(() => fs.rmSync(work, { recursive: true, force: true }));

    const inside = (host: string, command: string, input?: string | Buffer) => suite.lab.inside(host, command, { input });
    const attempt = (host: string, command: string, input?: string | Buffer) => attemptInside(suite.lab, host, command, input);
    const sshSudo = (host: string, command: string) => sudoOverSsh(suite.lab, host, command);
    /** The user and command line of process `pid` in the host ("" when it is gone). */
    const processOf = async (host: string, pid: string) => (await inside(host, `ps -o user:32=,args= -p ${pid} || true`)).trim().replace(/\s+/, " ");
    /** The PID a service's PID file names, and that process ("" when gone). */
    async function pidOf(host: string, pidFile: string): Promise<{ pid: string; process: string }> {
        const pid = (await inside(host, `cat ${pidFile} 2>/dev/null || true`)).trim();
        return { pid, process: /^\d+$/.test(pid) ? await processOf(host, pid) : "" };
    }
    /** GET /v2/ from the node over TLS, verified against `caFile`: the status line, or the TLS failure. */
    async function getV2(authorization: string | undefined, caFile: string): Promise<{ out: string; code: number }> {
        const request = `GET /v2/ HTTP/1.1\r\nHost: ${registry()}\r\n${authorization ? `Authorization: ${authorization}\r\n` : ""}Connection: close\r\n\r\n`;
        // The request, and with it the credentials, on stdin; -verify_ip: the certificate must name the address.
        return attempt("node", `openssl s_client -connect ${registry()} -CAfile ${caFile} -verify_return_error -verify_ip ${registryIp()} -quiet 2>&1 | sed -n '/^HTTP\\//p;/verify error/p;/[Ee]rror/p'`, request);
    }
    /** Waits until the registry's port accepts connections (start-stop-daemon --background returns at once). */
    async function waitForRegistry(): Promise<void> {
        await inside("node", `for i in $(seq 1 100); do (exec 3<>/dev/tcp/${registryIp()}/5000) 2>/dev/null && exit 0; sleep 0.1; done; echo 'registry not listening' >&2; exit 1`);
    }
    function hostsToml(scheme: "https" | "http", extra = ""): string {
        return `server = "${scheme}://${registry()}"\n\n[host."${scheme}://${registry()}"]\n  capabilities = ["pull", "resolve"]\n${extra}`;
    }
    const pull = (ref: string) => attempt("node", `ctr image pull --hosts-dir /etc/containerd/certs.d ${registry()}/${ref}`);

    it("image archives: skopeo reads the OCI archive and the docker archive ociImage.ts writes (linux/amd64, one layer)", async () => {
        oci = ociArchive(path.join(work, "demo-oci.tar"), { files: { "hello.txt": "hello from an OCI archive\n", "etc/demo/demo.conf": "answer=42\n" } });
        docker = dockerArchive(path.join(work, "demo-docker.tar"), { repoTag: "demo:2", files: { "hello.txt": "hello from a docker archive\n" } });
        for (const archive of [oci, docker]) await inside("registry", `cat >/root/${path.basename(archive.file)}`, fs.readFileSync(archive.file));
        const fromOci = JSON.parse(await inside("registry", "skopeo inspect oci-archive:/root/demo-oci.tar"));
        assert.equal(fromOci.Digest, oci.manifestDigest);
        assert.equal(fromOci.Architecture, "amd64");
        assert.equal(fromOci.Os, "linux");
        assert.deepEqual(fromOci.Layers, [oci.layerDigest]);
        const fromDocker = JSON.parse(await inside("registry", "skopeo inspect docker-archive:/root/demo-docker.tar"));
        assert.equal(fromDocker.Architecture, "amd64");
        assert.deepEqual(fromDocker.Layers, [docker.diffId]);
        const config = JSON.parse(await inside("registry", "skopeo inspect --config docker-archive:/root/demo-docker.tar"));
        assert.deepEqual(config.rootfs, { type: "layers", diff_ids: [docker.diffId] });
        // The layer, read back by skopeo: the files as given.
        await inside("registry", "mkdir /root/demo-dir && skopeo copy -q oci-archive:/root/demo-oci.tar dir:/root/demo-dir");
        const layer = `/root/demo-dir/${oci.layerDigest.slice("sha256:".length)}`;
        assert.equal(await inside("registry", `tar -xzOf ${layer} hello.txt && tar -xzOf ${layer} etc/demo/demo.conf`), "hello from an OCI archive\nanswer=42\n");
    });

    it("containerd: `service containerd start` over SSH runs the real daemon by its PID, with the overlayfs snapshotter and CRI loaded; status, restart", async () => {
        // The config as nodePrep.sh writes it: containerd's defaults with the systemd cgroup driver.
        await inside("node", "containerd config default | sed 's/SystemdCgroup = false/SystemdCgroup = true/' >/etc/containerd/config.toml");
        assert.equal((await attempt("node", "service containerd status")).code, 3);
        await sshSudo("node", "service containerd start");
        // The SSH session has ended; the daemon it started runs on.
        assert.equal((await attempt("node", "service containerd status")).code, 0);
        const first = await pidOf("node", "/run/containerd.pid");
        assert.equal(first.process, "root /usr/bin/containerd");
        assert.match(await inside("node", "ctr version"), /Server:\n\s+Version:\s+1\.6\./);
        const plugins = await inside("node", "ctr plugins ls");
        assert.match(plugins, /io\.containerd\.snapshotter\.v1\s+overlayfs\s+\S+\s+ok/);
        assert.match(plugins, /io\.containerd\.grpc\.v1\s+cri\s+\S+\s+ok/);
        assert.notEqual((await inside("node", "findmnt -n -o FSTYPE --target /var/lib/containerd")).trim(), "overlay");
        // The unit's ExecStartPre modprobe is no call of the project's: the guard recorded nothing.
        const calls = () => fs.readFileSync(path.join(suite.lab.clusterState, "calls"), "utf8").split("\n");
        assert.deepEqual(calls().filter((c) => c.startsWith("node modprobe")), []);

        await sshSudo("node", "service containerd restart");
        const second = await pidOf("node", "/run/containerd.pid");
        assert.notEqual(second.pid, first.pid);
        assert.equal(second.process, "root /usr/bin/containerd");
        assert.equal(await processOf("node", first.pid), "", "the first daemon is gone");
        assert.equal((await inside("node", "pgrep -x containerd")).trim(), second.pid, "exactly one daemon");
        // A config containerd cannot read fails the restart, and the running daemon stays.
        await inside("node", "cp /etc/containerd/config.toml /root/config.toml && echo 'oom_score = = 1' >>/etc/containerd/config.toml");
        const bad = await attempt("node", "service containerd restart");
        assert.notEqual(bad.code, 0);
        assert.match(bad.out, /failed to load TOML/);
        assert.equal((await pidOf("node", "/run/containerd.pid")).pid, second.pid);
        await inside("node", "cp /root/config.toml /etc/containerd/config.toml");
        assert.deepEqual(
            calls().filter((c) => c.startsWith("node service-containerd")),
            ["node service-containerd status", "node service-containerd start", "node service-containerd status", "node service-containerd restart", "node service-containerd restart"],
        );
    });

    it("docker-registry: TLS with the test's CA and htpasswd logins, started over SSH by Debian's init script; /v2/ answers 401 without login, 200 with", async () => {
        const ip = registryIp();
        await inside(
            "registry",
            [
                "set -e",
                "mkdir -p /root/pki /root/certs && cd /root/pki",
                "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=lab-registry-test-ca 2>/dev/null",
                `openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout registry.key -out registry.csr -subj /CN=${ip} 2>/dev/null`,
                `printf 'subjectAltName=IP:${ip}\\nbasicConstraints=CA:FALSE\\nkeyUsage=critical,digitalSignature\\nextendedKeyUsage=serverAuth\\n' >registry.ext`,
                "openssl x509 -req -in registry.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out registry.crt -days 2 -extfile registry.ext 2>/dev/null",
                "install -m 0644 registry.crt /etc/docker/registry/tls.crt",
                "install -m 0640 -g docker-registry registry.key /etc/docker/registry/tls.key",
                "cp ca.crt /root/certs/ca.crt",
                // A second CA, which signed nothing the registry serves.
                "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout other-ca.key -out other-ca.crt -days 2 -subj /CN=lab-other-ca 2>/dev/null",
            ].join("\n"),
        );
        // htpasswd -i reads the password from stdin; bcrypt (-B), the only hash Distribution accepts.
        await inside("registry", `umask 027 && htpasswd -B -i -c /etc/docker/registry/htpasswd ${user} 2>/dev/null && chgrp docker-registry /etc/docker/registry/htpasswd`, password);
        assert.match(await inside("registry", "cat /etc/docker/registry/htpasswd"), new RegExp(`^${user}:\\$2y\\$`));
        // The registry step's own config (TLS and htpasswd on).
        await inside("registry", "cat >/etc/docker/registry/config.yml", registryConfig({ port: 5000, tls: true, logins: true }));
        for (const file of ["ca.crt", "other-ca.crt"]) await inside("node", `mkdir -p /root/ca && cat >/root/ca/${file}`, await inside("registry", `cat /root/pki/${file}`));

        await sshSudo("registry", "service docker-registry start");
        await waitForRegistry();
        assert.equal((await attempt("registry", "service docker-registry status")).code, 0);
        // As the unit runs it: User=docker-registry, ExecStart=/usr/bin/docker-registry serve /etc/docker/registry/config.yml.
        assert.equal((await pidOf("registry", "/var/run/docker-registry.pid")).process, "docker-registry /usr/bin/docker-registry serve /etc/docker/registry/config.yml");

        const anonymous = await getV2(undefined, "/root/ca/ca.crt");
        assert.match(anonymous.out, /^HTTP\/1\.1 401 Unauthorized\r?$/m);
        const login = await getV2(`Basic ${basic}`, "/root/ca/ca.crt");
        assert.match(login.out, /^HTTP\/1\.1 200 OK\r?$/m);
        const wrong = await getV2(`Basic ${Buffer.from(`${user}:not-${password}`).toString("base64")}`, "/root/ca/ca.crt");
        assert.match(wrong.out, /^HTTP\/1\.1 401 Unauthorized\r?$/m);
        const otherCa = await getV2(`Basic ${basic}`, "/root/ca/other-ca.crt");
        assert.doesNotMatch(otherCa.out, /^HTTP\//m);
        assert.match(otherCa.out, /unable to get local issuer certificate|certificate verify failed/);
    });

    it("skopeo pushes both archives with the CA in --dest-cert-dir and the login in --dest-authfile; without the login it is refused", async () => {
        // A docker config.json, written from stdin, readable by root only.
        await inside("registry", "umask 077 && cat >/root/auth.json", JSON.stringify({ auths: { [registry()]: { auth: basic } } }));
        const push = (source: string, tag: string, authfile = "--dest-authfile /root/auth.json") => attempt("registry", `skopeo copy --dest-cert-dir /root/certs ${authfile} ${source} docker://${registry()}/demo:${tag}`);
        const anonymous = await push("oci-archive:/root/demo-oci.tar", "0", "");
        assert.notEqual(anonymous.code, 0);
        assert.match(anonymous.out, /unauthorized: authentication required/);
        const pushed = await push("oci-archive:/root/demo-oci.tar", "1");
        assert.equal(pushed.code, 0, pushed.out);
        const pushedDocker = await push("docker-archive:/root/demo-docker.tar", "2");
        assert.equal(pushedDocker.code, 0, pushedDocker.out);
        const remote = JSON.parse(await inside("registry", `skopeo inspect --cert-dir /root/certs --authfile /root/auth.json docker://${registry()}/demo:1`));
        assert.equal(remote.Digest, oci.manifestDigest, "the manifest as the archive holds it");
        assert.deepEqual(remote.RepoTags.sort(), ["1", "2"]);
    });

    it("ctr pulls over TLS with hosts.toml's CA: refused without a login, the login as hosts.toml's Authorization header works; a wrong CA fails", async () => {
        await inside("node", `mkdir -p ${certsDir()} && cp /root/ca/ca.crt ${certsDir()}/ca.crt && cat >${certsDir()}/hosts.toml`, hostsToml("https", `  ca = "${certsDir()}/ca.crt"\n`));
        const anonymous = await pull("demo:1");
        assert.notEqual(anonymous.code, 0);
        assert.match(anonymous.out, /401 Unauthorized/);

        // ctr's --user USER asks for the password on the console (passwordPrompt() in cmd/ctr/commands/resolver.go,
        // v1.6.20: console.Current(), which panics when none of stderr, stdout, stdin is a terminal): no stdin.
        const prompted = await attempt("node", `ctr image pull --hosts-dir /etc/containerd/certs.d --user ${user} ${registry()}/demo:1`, `${password}\n`);
        assert.notEqual(prompted.code, 0);
        assert.match(prompted.out, /panic: provided file is not a console/);

        // The login as a header of the host (hosts.toml's [host.<url>.header], containerd docs/hosts.md): in a
        // file only root reads, sent with every request to that host.
        await inside("node", `umask 077 && cat >${certsDir()}/hosts.toml`, hostsToml("https", `  ca = "${certsDir()}/ca.crt"\n\n  [host."https://${registry()}".header]\n    Authorization = "Basic ${basic}"\n`));
        for (const tag of ["1", "2"]) {
            const pulled = await pull(`demo:${tag}`);
            assert.equal(pulled.code, 0, pulled.out);
        }
        const images = await inside("node", "ctr image ls");
        assert.match(images, new RegExp(`^${registry().replace(/\./g, "\\.")}/demo:1\\s+application/vnd\\.oci\\.image\\.manifest\\.v1\\+json\\s+${oci.manifestDigest}\\s`, "m"));
        assert.match(images, new RegExp(`/demo:2\\s`));
        // Unpacked by the overlayfs snapshotter; a snapshot on top of the layer mounts as an overlay (an upperdir
        // on the host's own filesystem) and shows the image's files.
        const snapshots = await inside("node", "ctr snapshots ls");
        assert.match(snapshots, new RegExp(`^${oci.diffId}\\s+Committed`, "m"));
        assert.match(snapshots, new RegExp(`^${docker.diffId}\\s+Committed`, "m"));
        const view = await inside(
            "node",
            [
                "set -e",
                `ctr snapshots prepare demo-view ${oci.diffId} >/dev/null`,
                "mkdir -p /mnt/demo",
                'eval "$(ctr snapshots mounts /mnt/demo demo-view)"',
                "findmnt -n -o FSTYPE /mnt/demo",
                "cat /mnt/demo/hello.txt /mnt/demo/etc/demo/demo.conf",
                "umount /mnt/demo",
                "ctr snapshots rm demo-view",
            ].join("\n"),
        );
        assert.equal(view, "overlay\nhello from an OCI archive\nanswer=42\n");

        await inside("node", "ctr image rm $(ctr image ls -q) >/dev/null");
        await inside("node", `umask 077 && cat >${certsDir()}/hosts.toml`, hostsToml("https", `  ca = "/root/ca/other-ca.crt"\n\n  [host."https://${registry()}".header]\n    Authorization = "Basic ${basic}"\n`));
        const wrongCa = await pull("demo:1");
        assert.notEqual(wrongCa.code, 0);
        assert.match(wrongCa.out, /x509: certificate signed by unknown authority/);
    });

    it("plain HTTP: the registry restarted without TLS or logins; skopeo pushes without TLS verification, ctr pulls with server = http://", async () => {
        const before = await pidOf("registry", "/var/run/docker-registry.pid");
        await inside("registry", "sed -i -e '/^  tls:/,/^    key:/d' -e '/^auth:/,$d' /etc/docker/registry/config.yml");
        assert.doesNotMatch(await inside("registry", "cat /etc/docker/registry/config.yml"), /tls:|auth:/);
        await sshSudo("registry", "service docker-registry restart");
        const after = await pidOf("registry", "/var/run/docker-registry.pid");
        assert.notEqual(after.pid, before.pid);
        assert.match(after.process, /^docker-registry \/usr\/bin\/docker-registry serve/);
        await waitForRegistry();
        const plain = await attempt("node", `exec 3<>/dev/tcp/${registryIp()}/5000 && printf 'GET /v2/ HTTP/1.1\\r\\nHost: ${registry()}\\r\\nConnection: close\\r\\n\\r\\n' >&3 && head -1 <&3`);
        assert.match(plain.out, /^HTTP\/1\.1 200 OK/);
        const pushed = await attempt("registry", `skopeo copy --dest-tls-verify=false oci-archive:/root/demo-oci.tar docker://${registry()}/demo:3`);
        assert.equal(pushed.code, 0, pushed.out);

        // The https hosts.toml no longer reaches it.
        await inside("node", `cat >${certsDir()}/hosts.toml`, hostsToml("https", `  ca = "${certsDir()}/ca.crt"\n`));
        const overTls = await pull("demo:3");
        assert.notEqual(overTls.code, 0);
        assert.match(overTls.out, /server gave HTTP response to HTTPS client/);
        await inside("node", `cat >${certsDir()}/hosts.toml`, hostsToml("http"));
        const pulled = await pull("demo:3");
        assert.equal(pulled.code, 0, pulled.out);
        assert.match(await inside("node", "ctr image ls -q"), new RegExp(`/demo:3\\n`));
    });

    it("stop: each service stops exactly the PID it started; a killed containerd is dead with a PID file (status 1) and starts again; images outlive a power cycle", async () => {
        const registryPid = (await pidOf("registry", "/var/run/docker-registry.pid")).pid;
        await sshSudo("registry", "service docker-registry stop");
        for (let i = 0; i < 50 && (await processOf("registry", registryPid)); i++) await new Promise((r) => setTimeout(r, 100));
        assert.equal(await processOf("registry", registryPid), "", "the registry's PID is gone");
        assert.notEqual((await attempt("registry", "service docker-registry status")).code, 0);
        assert.notEqual((await attempt("node", `exec 3<>/dev/tcp/${registryIp()}/5000`)).code, 0, "nothing listens on 5000");

        const pid = (await pidOf("node", "/run/containerd.pid")).pid;
        await inside("node", `kill -KILL ${pid}`);
        for (let i = 0; i < 50 && (await attempt("node", "service containerd status")).code === 0; i++) await new Promise((r) => setTimeout(r, 100));
        const dead = await attempt("node", "service containerd status");
        assert.equal(dead.code, 1, dead.out);
        await sshSudo("node", "service containerd start");
        assert.equal((await attempt("node", "service containerd status")).code, 0);
        assert.match(await inside("node", "ctr image ls -q"), /\/demo:3\n/);
        const again = (await pidOf("node", "/run/containerd.pid")).pid;
        await sshSudo("node", "service containerd stop");
        assert.equal((await attempt("node", "service containerd status")).code, 3);
        assert.equal(await processOf("node", again), "", "the daemon's PID is gone");
        assert.equal((await attempt("node", "pgrep -x containerd")).code, 1, "no containerd left");
        await sshSudo("node", "service containerd stop");

        // A power cycle: the host's /var/lib/containerd is its own and stays; nothing starts containerd at boot.
        await suite.lab.killSshd("node");
        await suite.lab.startSshd("node");
        assert.equal((await attempt("node", "service containerd status")).code, 3);
        await inside("node", "service containerd start");
        assert.match(await inside("node", "ctr image ls -q"), /\/demo:3\n/);
        await inside("node", "service containerd stop");
    });
});
