import { strict as assert } from "node:assert";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import { useLab } from "./support/labSuite";
import { registryImage, RegistryImage } from "./support/registryImage";

const run = promisify(execFile);

/** The registry step's unit, as providers/registry/registryServer.sh writes it (its own container_unit and settings). */
async function productUnit(image: string): Promise<string> {
    const script = path.join(__dirname, "..", "providers", "registry", "registryServer.sh");
    const text = fs.readFileSync(script, "utf8");
    const settings = ["CONFIG_DIR", "ROOT", "CONTAINER_NAMESPACE"].map((name) => {
        const line = new RegExp(`^${name}=.*$`, "m").exec(text);
        if (!line) throw new Error(`${script} sets no ${name}= any more: this test needs updating`);
        return line[0];
    });
    const fn = /^container_unit\(\) \{\n[\s\S]*?\n\}$/m.exec(text);
    if (!fn) throw new Error(`${script} has no container_unit() any more: this test needs updating`);
    return (await run("bash", ["-c", `${settings.join("\n")}\n${fn[0]}\ncontainer_unit "$1"`, "bash", image])).stdout;
}

/**
 * The lab's stand-in for systemd running a unit of ours (test/lab/stand-ins/lib/systemd-unit.sh, reached through
 * `service k8s-vnf-registry ACTION` and /etc/init.d/k8s-vnf-registry), with the registry step's own unit: a
 * registry image (test/support/registryImage.ts: Debian's registry binary as /bin/registry) imported into
 * containerd and run by `ctr run --net-host` in a lab host (real runc, the host's own cgroups: host-init.sh),
 * answering on the host's address. Every command of the project's kind goes over SSH with sudo, as the
 * project's scripts run.
 */
describe("lab: the systemd stand-in runs the registry step's unit; ctr run runs the registry image in a lab host", function () {
    this.timeout(180_000);
    const suite = useLab(["registry", "client"]);
    const work = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-systemd-test-"));
    const NS = "k8s-vnf-registry";
    const PIDFILE = "/run/k8s-standin/units/k8s-vnf-registry.pid";
    let docker: RegistryImage;
    let oci: RegistryImage;
    let image = "";
    /** Decoys this suite started, stopped after it by PID. */
    const decoys: string[] = [];

    after(async () => {
        fs.rmSync(work, { recursive: true, force: true });
        if (suite.lab && decoys.length) await suite.lab.inside("registry", `kill ${decoys.join(" ")} 2>/dev/null || true`).catch(() => undefined);
    });

    const address = () => suite.lab.host("registry").address;
    const inside = (host: string, command: string, input?: string | Buffer) => suite.lab.inside(host, command, { input });
    /** A command inside a host: its combined output and exit code (never throws). */
    async function attempt(host: string, command: string, input?: string | Buffer): Promise<{ out: string; code: number }> {
        const out = await inside(host, `{ ${command}\n} 2>&1; echo "rc=$?"`, input);
        const code = Number(/rc=(\d+)\n$/.exec(out)![1]);
        return { out: out.replace(/rc=\d+\n$/, ""), code };
    }
    /** `sudo COMMAND` over a real SSH session as the login user: its output and exit code (never throws). */
    async function sshSudo(host: string, command: string): Promise<{ out: string; code: number }> {
        const args = ["-q", "-i", suite.lab.privateKeyFile, "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", `ubuntu@${suite.lab.host(host).address}`, `sudo -S -p '' sh -c '${command} 2>&1'`];
        const child = run("ssh", args, { timeout: 120_000 });
        child.child.stdin!.end(`${suite.lab.password}\n`);
        try {
            return { out: (await child).stdout, code: 0 };
        } catch (e) {
            const err = e as { stdout?: string; code?: number };
            if (typeof err.code !== "number") throw e;
            return { out: err.stdout ?? "", code: err.code };
        }
    }
    const service = (action: string, unit = "k8s-vnf-registry") => sshSudo("registry", `service ${unit} ${action}`);
    /** /v2/ from the other host: the HTTP status, "000" when nothing answers. */
    const v2FromClient = async () => (await inside("client", `curl -s -o /dev/null -w '%{http_code}' --max-time 3 http://${address()}:5000/v2/ || true`)).trim();
    async function waitForV2(): Promise<string> {
        let code = "";
        for (let i = 0; i < 100; i++) {
            code = await v2FromClient();
            if (code === "200") return code;
            await new Promise((r) => setTimeout(r, 200));
        }
        return code;
    }
    /** The user and command line of process `pid` in the registry host ("" when it is gone). */
    const processOf = async (pid: string) => (await inside("registry", `ps -o user:32=,args= -p ${pid} || true`)).trim().replace(/\s+/, " ");
    const mainPid = async () => (await inside("registry", `cut -d' ' -f1 ${PIDFILE} 2>/dev/null || true`)).trim();
    /** The containerd tasks of the registry's namespace: "ID PID STATUS" lines. */
    const tasks = async () => (await inside("registry", `ctr -n ${NS} tasks ls | tail -n +2`)).trim().split("\n").filter(Boolean).map((l) => l.trim().split(/\s+/).join(" "));
    const containers = async () => (await inside("registry", `ctr -n ${NS} containers ls -q`)).trim();

    it("registryImage: docker and OCI archives of Debian's registry at /bin/registry with its libraries; ctr imports both", async () => {
        docker = await registryImage(path.join(work, "registry-docker.tar"), "docker-archive");
        oci = await registryImage(path.join(work, "registry-oci.tar"), "oci-archive");
        assert.equal(docker.configDigest, oci.configDigest, "the same image in both formats");
        for (const archive of [docker, oci]) await inside("registry", `cat >/root/${path.basename(archive.file)}`, fs.readFileSync(archive.file));
        const layer = await inside("registry", "skopeo copy -q oci-archive:/root/registry-oci.tar dir:/root/registry-dir && tar -tvzf /root/registry-dir/" + oci.layerDigest.slice("sha256:".length));
        assert.match(layer, /^-rwxr-xr-x root\/root .* bin\/registry$/m);
        assert.match(layer, /^-rwxr-xr-x root\/root .* lib64\/ld-linux-x86-64\.so\.2$/m);
        assert.match(layer, /lib\/x86_64-linux-gnu\/libc\.so\.6$/m);
        assert.match(layer, /etc\/docker\/registry\/config\.yml$/m);
        const config = JSON.parse(await inside("registry", "skopeo inspect --config docker-archive:/root/registry-docker.tar"));
        assert.deepEqual(config.config.Cmd, ["/bin/registry", "serve", "/etc/docker/registry/config.yml"]);

        // As the registry step does: containerd started over SSH, the tar imported with --digests, its name picked.
        assert.equal((await sshSudo("registry", "service containerd start")).code, 0);
        await inside("registry", `ctr -n lab-oci images import --digests /root/registry-oci.tar >/dev/null`);
        const ociNames = (await inside("registry", "ctr -n lab-oci images ls -q")).trim().split("\n");
        assert.ok(ociNames.some((n) => n.endsWith(`:${oci.name}`)), `ctr names the OCI image by its ref name: ${ociNames.join(", ")}`);
        assert.ok(ociNames.some((n) => n.endsWith(`@${oci.manifestDigest}`)), `and by its digest (--digests): ${ociNames.join(", ")}`);
        await inside("registry", "ctr -n lab-oci images ls -q | xargs -r ctr -n lab-oci images rm >/dev/null");
        await inside("registry", `ctr -n ${NS} images import --digests /root/registry-docker.tar >/dev/null`);
        image = (await inside("registry", `ctr -n ${NS} images ls -q | grep -v '@sha256:' | head -n 1`)).trim();
        assert.equal(image, "docker.io/library/registry:2.8.2");
    });

    it("ctr run: runc runs the image in the lab host, in cgroups below the host's own, with the host's network (--net-host)", async () => {
        assert.ok(image, "the image is imported");
        const version = await attempt("registry", `ctr -n ${NS} run --rm --net-host ${image} probe /bin/registry --version`);
        assert.equal(version.code, 0, version.out);
        assert.match(version.out, /^\/bin\/registry github\.com\/docker\/distribution v?2\.8\.2/m);
        // A detached container: its cgroups (containerd's /NAMESPACE/ID) are below the host's (host-init.sh).
        await inside("registry", `ctr -n ${NS} run -d --net-host ${image} probe /bin/registry serve /etc/docker/registry/config.yml >/dev/null`);
        try {
            const pid = (await inside("registry", `ctr -n ${NS} tasks ls | awk '$1 == "probe" { print $2 }'`)).trim();
            assert.match(pid, /^\d+$/);
            const hostCgroups = fs.readFileSync(path.join(suite.lab.host("registry").dir, "cgroups"), "utf8").trim().split("\n");
            assert.ok(hostCgroups.length > 0);
            const own = path.basename(hostCgroups[0].split(" ")[2]);
            const lines = (await inside("registry", `cat /proc/${pid}/cgroup`)).trim().split("\n");
            assert.ok(lines.length >= hostCgroups.length, lines.join("\n"));
            for (const line of lines) assert.ok(line.endsWith(`/${own}/${NS}/probe`), `${line} is below ${own}`);
            // Over SSH (the host's cgroup namespace) the host's cgroup is the root.
            assert.match((await sshSudo("registry", `cat /proc/${pid}/cgroup`)).out, new RegExp(`^\\d+:memory:/${NS}/probe$`, "m"));
            // The official config listens on :5000 in the host's network namespace: the other host reaches it.
            assert.equal(await waitForV2(), "200");
        } finally {
            await inside("registry", `ctr -n ${NS} tasks kill -s SIGKILL probe; for i in $(seq 1 50); do ctr -n ${NS} tasks ls | grep -q '^probe .* RUNNING' || break; sleep 0.1; done; ctr -n ${NS} tasks rm probe >/dev/null 2>&1; ctr -n ${NS} containers rm probe`);
        }
        assert.equal(await v2FromClient(), "000");
        assert.equal(await containers(), "");
    });

    it("service k8s-vnf-registry start runs the registry step's unit: ExecStartPre (failures ignored: '-'), ExecStart in the background; the registry answers on the host's address; status 0", async () => {
        assert.ok(image, "the image is imported");
        assert.equal((await service("status")).code, 4, "no unit yet: no such unit");
        await inside("registry", "mkdir -p /var/lib/docker-registry /etc/docker/registry /etc/systemd/system");
        await inside("registry", "cat >/etc/docker/registry/config.yml", "version: 0.1\nlog:\n  fields:\n    service: registry\nstorage:\n  filesystem:\n    rootdirectory: /var/lib/docker-registry\nhttp:\n  addr: :5000\n");
        await inside("registry", "cat >/etc/systemd/system/k8s-vnf-registry.service", await productUnit(image));
        assert.equal((await service("status")).code, 3, "the unit is there, not running");

        const start = await service("start");
        assert.equal(start.code, 0, start.out);
        assert.equal(await waitForV2(), "200");
        const status = await service("status");
        assert.equal(status.code, 0, status.out);
        assert.match(status.out, /Active: active \(running\)/);
        const pid = await mainPid();
        assert.match(await processOf(pid), new RegExp(`^root /usr/bin/ctr -n ${NS} run --rm --net-host .* ${image.replace(/\./g, "\\.")} registry /bin/registry serve /etc/docker/registry/config\\.yml$`));
        assert.deepEqual((await tasks()).map((t) => t.replace(/ \d+ /, " PID ")), ["registry PID RUNNING"]);
        const log = await inside("registry", "cat /var/log/k8s-vnf-registry.log");
        assert.match(log, /ExecStartPre exited with status 1 \(ignored: the command line starts with "-"\)/, "the cleanup lines failed (nothing to clean) and were ignored");
        assert.match(log, /listening on \[::\]:5000/);
    });

    it("stop runs ExecStop, then stops exactly the main process: the task and container are gone, a look-alike process stays; status 3; start again serves", async () => {
        const pid = await mainPid();
        assert.match(pid, /^\d+$/);
        // A process with the same command line, not started by the unit: stop must leave it alone.
        const decoy = (await inside("registry", `setsid bash -c 'exec -a "/usr/bin/ctr -n ${NS} run --rm --net-host" sleep 300' </dev/null >/dev/null 2>&1 & echo $!`)).trim();
        decoys.push(decoy);
        const stop = await service("stop");
        assert.equal(stop.code, 0, stop.out);
        assert.equal(await processOf(pid), "", "the main process is gone");
        assert.deepEqual(await tasks(), [], "the registry's task is gone");
        assert.equal(await containers(), "", "ctr run --rm removed the container");
        assert.equal(await processOf(decoy), `root /usr/bin/ctr -n ${NS} run --rm --net-host 300`, "the look-alike runs on");
        assert.equal((await service("status")).code, 3);
        assert.equal(await v2FromClient(), "000");
        assert.match(await inside("registry", "cat /var/log/k8s-vnf-registry.log"), /ExecStop=-\/usr\/bin\/ctr -n k8s-vnf-registry tasks kill -s SIGTERM registry\n/);
        assert.equal((await service("stop")).code, 0, "stopping a stopped unit succeeds");

        assert.equal((await service("start")).code, 0);
        assert.equal(await waitForV2(), "200");
        const again = await mainPid();
        assert.notEqual(again, pid);
        assert.equal((await service("status")).code, 0);
        assert.equal((await service("start")).code, 0, "start of a running unit does nothing");
        assert.equal(await mainPid(), again);
        await inside("registry", `kill ${decoy}`);
        decoys.splice(decoys.indexOf(decoy), 1);
    });

    it("a crashed main process (ctr killed) leaves the container running; start cleans it up with the unit's ExecStartPre lines and serves again; restart", async () => {
        const pid = await mainPid();
        const [task] = await tasks();
        await inside("registry", `kill -KILL ${pid}`);
        for (let i = 0; i < 50 && (await processOf(pid)) !== ""; i++) await new Promise((r) => setTimeout(r, 100));
        assert.equal((await service("status")).code, 3, "the unit's main process is gone");
        assert.deepEqual(await tasks(), [task], "its container still runs (under containerd's shim)");
        assert.equal(await v2FromClient(), "200");
        // Without ExecStartPre's kill and rm, `ctr run` would fail: the container "registry" exists.
        assert.equal((await service("start")).code, 0);
        assert.equal(await waitForV2(), "200");
        const [fresh] = await tasks();
        assert.match(fresh, /^registry \d+ RUNNING$/);
        assert.notEqual(fresh, task, "a new container task");
        assert.equal((await service("status")).code, 0);

        const before = await mainPid();
        const restart = await service("restart");
        assert.equal(restart.code, 0, restart.out);
        assert.equal(await waitForV2(), "200");
        assert.notEqual(await mainPid(), before);
        assert.equal(await processOf(before), "");
        assert.equal((await tasks()).length, 1);
    });

    it("a failing ExecStartPre without '-' fails the start and ExecStart does not run; what the stand-in does not implement is refused before anything runs", async () => {
        assert.equal((await service("stop")).code, 0);
        // Another unit of ours, through the same init script under its name.
        await inside("registry", "cp /etc/init.d/k8s-vnf-registry /etc/init.d/lab-demo");
        const demo = (body: string) => inside("registry", "cat >/etc/systemd/system/lab-demo.service", `[Unit]\nDescription=lab demo\n\n[Service]\n${body}`);
        await demo("ExecStartPre=-/usr/bin/false\nExecStartPre=/usr/bin/touch /root/pre-1\nExecStartPre=/usr/bin/false\nExecStartPre=/usr/bin/touch /root/pre-2\nExecStart=/usr/bin/sleep 300\n");
        const failed = await service("start", "lab-demo");
        assert.equal(failed.code, 1, failed.out);
        assert.match(failed.out, /Job for lab-demo\.service failed because the control process exited with error code/);
        assert.equal(await inside("registry", "ls /root/pre-1 /root/pre-2 2>/dev/null || true"), "/root/pre-1\n", "the pre commands ran up to the failing one");
        assert.equal((await service("status", "lab-demo")).code, 3);
        assert.equal(await inside("registry", "cat /run/k8s-standin/units/lab-demo.pid 2>/dev/null || true"), "", "no main process");

        for (const [directive, message] of [
            ["Environment=FOO=1\n", /\[Service\] Environment= is not implemented in the lab/],
            ["KillMode=process\n", /\[Service\] KillMode= is not implemented in the lab/],
            ["Type=forking\n", /Type=forking is not implemented in the lab/],
            ["ExecStartPre=+/usr/bin/true\n", /the prefix \+ is not implemented in the lab/],
            ["ExecStartPre=/usr/bin/echo %n\n", /specifier %n .* is not implemented in the lab/],
            ["ExecStartPre=/usr/bin/echo $HOME\n", /variable \$HOME .* is not implemented in the lab/],
            ["ExecStartPre=true\n", /only an absolute path to the executable is implemented in the lab/],
        ] as const) {
            await inside("registry", "rm -f /root/pre-1");
            await demo(`ExecStartPre=/usr/bin/touch /root/pre-1\n${directive}ExecStart=/usr/bin/sleep 300\n`);
            const refused = await service("start", "lab-demo");
            assert.equal(refused.code, 1, `${directive}: ${refused.out}`);
            assert.match(refused.out, message);
            assert.equal(await inside("registry", "ls /root/pre-1 2>/dev/null || true"), "", `${directive}: nothing ran`);
        }
    });

    it("RequiresMountsFor= mounts the fstab mount points on the way first (the registry's volume); a mount that fails fails the start", async () => {
        await inside("registry", "mkdir -p /srv/lab-mnt /srv/lab-bad && printf '%s\\n' 'tmpfs /srv/lab-mnt tmpfs noauto,size=1m 0 0' '/dev/lab-missing /srv/lab-bad ext4 noauto 0 0' >>/etc/fstab");
        const unit = (path: string) => inside("registry", "cat >/etc/systemd/system/lab-demo.service", `[Unit]\nRequiresMountsFor=${path}\n\n[Service]\nExecStart=/usr/bin/sleep 300\n`);
        await unit("/srv/lab-mnt/data");
        assert.equal((await inside("registry", "findmnt -n -o FSTYPE /srv/lab-mnt || true")).trim(), "");
        const start = await service("start", "lab-demo");
        assert.equal(start.code, 0, start.out);
        assert.equal((await inside("registry", "findmnt -n -o FSTYPE /srv/lab-mnt")).trim(), "tmpfs");
        assert.equal((await service("status", "lab-demo")).code, 0);
        assert.equal((await service("stop", "lab-demo")).code, 0);

        await unit("/srv/lab-bad");
        const failed = await service("start", "lab-demo");
        assert.equal(failed.code, 1, failed.out);
        assert.match(failed.out, /A dependency job for lab-demo\.service failed \(RequiresMountsFor=\/srv\/lab-bad: mount \/srv\/lab-bad\)/);
        assert.equal((await service("status", "lab-demo")).code, 3);
        await inside("registry", "umount /srv/lab-mnt && sed -i '/\\/srv\\/lab-/d' /etc/fstab");
    });

    it("stop: a main process that ignores SIGTERM gets SIGKILL after TimeoutStopSec; ExecStop sees $MAINPID; quoting and $$ as systemd reads them", async () => {
        await inside("registry", "rm -f /root/stop.log");
        await inside(
            "registry",
            "cat >/etc/systemd/system/lab-demo.service",
            [
                "[Service]",
                `ExecStart=/usr/bin/perl -e "$$SIG{TERM} = 'IGNORE'; sleep 1000"`,
                'ExecStop=/usr/bin/sh -c "echo stopping ${MAINPID} >/root/stop.log"',
                "ExecStop=/usr/bin/kill -0 $MAINPID",
                "TimeoutStopSec=2",
                "",
            ].join("\n"),
        );
        assert.equal((await service("start", "lab-demo")).code, 0);
        const pid = (await inside("registry", "cut -d' ' -f1 /run/k8s-standin/units/lab-demo.pid")).trim();
        for (let i = 0; i < 50 && !(await processOf(pid)).includes("perl"); i++) await new Promise((r) => setTimeout(r, 100));
        assert.equal(await processOf(pid), "root /usr/bin/perl -e $SIG{TERM} = 'IGNORE'; sleep 1000");
        const started = Date.now();
        assert.equal((await service("stop", "lab-demo")).code, 0);
        assert.ok(Date.now() - started >= 2000, "stop waited TimeoutStopSec before SIGKILL");
        assert.equal(await processOf(pid), "");
        assert.equal(await inside("registry", "cat /root/stop.log"), `stopping ${pid}\n`);
        assert.match(await inside("registry", "cat /var/log/lab-demo.log"), new RegExp(`main process ${pid} did not exit within 2s of SIGTERM: SIGKILL`));
    });

    it("Requires=containerd.service: start starts containerd first when it is stopped", async () => {
        assert.equal((await service("stop")).code, 0);
        assert.equal((await sshSudo("registry", "service containerd stop")).code, 0);
        assert.equal((await sshSudo("registry", "service containerd status")).code, 3);
        assert.equal((await service("start")).code, 0);
        assert.equal((await sshSudo("registry", "service containerd status")).code, 0);
        assert.equal(await waitForV2(), "200");
    });

    it("the registry unit stops for good, and host-down removes the host's cgroups, its containers' included", async () => {
        assert.equal((await service("stop")).code, 0);
        assert.deepEqual(await tasks(), []);
        // A container left running: the host's end takes it and its cgroups along.
        await inside("registry", `ctr -n ${NS} run -d --net-host ${image} leftover /bin/registry serve /etc/docker/registry/config.yml >/dev/null`);
        const cgroups = fs.readFileSync(path.join(suite.lab.host("registry").dir, "cgroups"), "utf8").trim().split("\n").map((l) => l.split(" ")[2]);
        assert.ok(cgroups.every((dir) => fs.existsSync(path.join(dir, NS, "leftover"))), "the container's cgroups are below the host's");
        await suite.lab.stopHost("registry");
        assert.deepEqual(cgroups.filter((dir) => fs.existsSync(dir)), []);
    });
});
