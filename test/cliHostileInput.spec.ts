/** import-request with hostile files and text: FIFOs, directories, huge and sparse files, stack files the real CLI rewrites, what reaches the terminal. */
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as YAML from "yaml";
import { parseRequestText } from "../config/requestText";
import { makePackageDir, REQUESTS_DIR } from "./support/fixtures";
import { PROJECT_DIR } from "./support/program";
import { binary, cli, Run, scratchProject, SECRETS, useRealPulumi } from "./support/cliRun";

const MIB = 1024 * 1024;

describe("k8s-vnf import-request with hostile files and text", () => {
    const PV3 = "Files/kubernetes/nfs-pv3.yaml";
    const PV3_FIELD = /pv_registration_params\[2\]\.pv_manifest_file_path: Files\/kubernetes\/nfs-pv3\.yaml/;

    it("a package file that is a directory is refused by its request field", async () => {
        const p = scratchProject();
        try {
            const manifest = path.join(p.dir, "package", PV3);
            fs.rmSync(manifest);
            fs.mkdirSync(manifest);
            const dir = await cli(["import-request", p.request, "--package-dir", path.join(p.dir, "package"), "--project", p.dir]);
            assert.equal(dir.code, 1);
            assert.match(dir.err, new RegExp(`${PV3_FIELD.source} is a directory, not a file`));
        } finally {
            p.cleanup();
        }
    });

    it("a package file that is a FIFO is refused by its request field, never opened (opening waits for a writer)", () => {
        const p = scratchProject();
        try {
            const manifest = path.join(p.dir, "package", PV3);
            fs.rmSync(manifest);
            assert.equal(spawnSync("mkfifo", [manifest]).status, 0);
            const fifo = binary(["import-request", p.request, "--package-dir", path.join(p.dir, "package"), "--project", p.dir]);
            assert.equal(fifo.signal, null, "killed after 30 s: it waited for a writer");
            assert.equal(fifo.code, 1, fifo.err);
            assert.match(fifo.err, new RegExp(`${PV3_FIELD.source} is a FIFO \\(named pipe\\), not a file`));
            assert.equal(fifo.out, "");
        } finally {
            p.cleanup();
        }
    });

    it("a package manifest over 1 MiB is refused from its size, unread (a sparse 600 MB file); one of 1 MiB is read", async () => {
        const p = scratchProject();
        try {
            const manifest = path.join(p.dir, "package", PV3);
            const args = ["import-request", p.request, "--package-dir", path.join(p.dir, "package"), "--project", p.dir];
            fs.truncateSync(manifest, 600 * MIB);
            const huge = await cli(args);
            assert.equal(huge.code, 1);
            assert.match(huge.err, new RegExp(`${PV3_FIELD.source} is 600 MiB, more than the 1 MiB such a file may have`));

            // A YAML comment fills the valid manifest up to the limit exactly.
            const text = fs.readFileSync(path.join(PROJECT_DIR, "examples/package", PV3), "utf8");
            fs.writeFileSync(manifest, `${text}#${"x".repeat(MIB - Buffer.byteLength(text) - 2)}\n`);
            assert.equal(fs.statSync(manifest).size, MIB);
            const full = await cli(args);
            assert.equal(full.code, 0, full.err);
            fs.appendFileSync(manifest, "\n");
            assert.match((await cli(args)).err, /is 1 MiB, more than the 1 MiB/);
        } finally {
            p.cleanup();
        }
    });

    it("a registry image archive is checked by its tar header alone, whatever its size (a sparse 600 MB docker save)", async () => {
        const pkg = makePackageDir();
        try {
            const archive = path.join(pkg.dir, "Files/images/private_registry.tar");
            fs.truncateSync(archive, 600 * MIB);
            const run = await cli(["import-request", path.join(REQUESTS_DIR, "registry-vnf-instantiate.json"), "--package-dir", pkg.dir]);
            assert.equal(run.code, 0, run.err);
            assert.equal(YAML.parse(run.out).config["k8s-vnf:registry"].imageFile, "Files/images/private_registry.tar");

            fs.writeFileSync(archive, Buffer.alloc(1024));
            const notTar = await cli(["import-request", path.join(REQUESTS_DIR, "registry-vnf-instantiate.json"), "--package-dir", pkg.dir]);
            assert.match(notTar.err, /private_registry_installation_param\.image_path: Files\/images\/private_registry\.tar: not a tar archive/);
        } finally {
            pkg.cleanup();
        }
    });

    it("a CA certificate file of 1 MiB of BEGIN lines is refused at once", async () => {
        const pkg = makePackageDir();
        try {
            const begin = "-----BEGIN CERTIFICATE-----\n";
            fs.writeFileSync(path.join(pkg.dir, "Files/registries/ca.crt"), begin.repeat(Math.floor(MIB / begin.length)));
            const started = Date.now();
            const run = await cli(["import-request", path.join(REQUESTS_DIR, "registry-connection-instantiate.json"), "--package-dir", pkg.dir]);
            assert.ok(Date.now() - started < 10_000, `took ${Date.now() - started} ms`);
            assert.equal(run.code, 1);
            assert.match(run.err, /private_registry_connection_info\[1\]\.certificate_path: Files\/registries\/ca\.crt: not a PEM certificate/);
        } finally {
            pkg.cleanup();
        }
    });

    it("a request file over 4 MiB is refused unread; a directory is refused", async () => {
        const p = scratchProject();
        try {
            fs.truncateSync(p.request, 600 * MIB);
            const huge = await cli(["import-request", p.request, "--project", p.dir]);
            assert.equal(huge.code, 1);
            assert.match(huge.err, /request\.json is larger than 4 MiB: not a request body/);
            const dir = await cli(["import-request", p.dir, "--project", p.dir]);
            assert.equal(dir.code, 1);
            assert.match(dir.err, /cannot read .*: EISDIR/);
        } finally {
            p.cleanup();
        }
    });

    describe("stack files the real Pulumi CLI rewrites", function () {
        this.timeout(120_000);
        const realPulumi = useRealPulumi();

        it("a request file name with line breaks stays one comment line: the stack file gets no other keys", async () => {
            const p = scratchProject();
            try {
                const hostile = path.join(p.dir, "x.json\nconfig:\n  evil: 1\r\u2028evil2: 2\u0085evil3: 3\n");
                fs.renameSync(p.request, hostile);
                const header = "# Converted from x.json\\nconfig:\\n  evil: 1\\r\\u2028evil2: 2\\x85evil3: 3\\n by k8s-vnf import-request.";
                const rawControl = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/;

                const printed = await cli(["import-request", hostile, "--project", p.dir]);
                assert.equal(printed.code, 0, printed.err);
                assert.equal(printed.out.split("\n")[0], header);
                assert.doesNotMatch(printed.out, rawControl);
                assert.deepEqual(Object.keys(YAML.parse(printed.out)), ["config"]);

                const written = await cli(["import-request", hostile, "--stack", "edge", "--project", p.dir], realPulumi(p.dir).env);
                assert.equal(written.code, 0, written.err);
                const text = fs.readFileSync(p.stackFile, "utf8");
                assert.equal(text.split("\n")[0], header);
                assert.doesNotMatch(text, rawControl);
                const doc = YAML.parse(text);
                assert.deepEqual(Object.keys(doc).sort(), ["config", "encryptionsalt"]);
                assert.ok(Object.keys(doc.config).every((k) => k.startsWith("k8s-vnf:")), Object.keys(doc.config).join(", "));
            } finally {
                p.cleanup();
            }
        });

        it("control characters in values are written escaped (Pulumi's YAML reader refuses them raw) and read back as they were", async () => {
            const p = scratchProject();
            try {
                const vimName = "vim\u007f\u009b2J\u2028\u202eend\u001b[0m";
                const body = parseRequestText(fs.readFileSync(p.request, "utf8")) as any;
                body.additionalParams.k8s_cluster_installation_param.vim_name = vimName;
                fs.writeFileSync(p.request, JSON.stringify(body));
                const run = await cli(["import-request", p.request, "--project", p.dir]);
                assert.equal(run.code, 0, run.err);
                assert.match(run.out, /^ {4}vimName: "vim\\x7f\\x9b2J\\u2028\\u202eend\\e\[0m"$/m);
                assert.doesNotMatch(run.out, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202e]/);
                assert.equal(YAML.parse(run.out).config["k8s-vnf:tacker"].vimName, vimName);

                // With --stack the Pulumi CLI rewrites the file as it sets the secrets: it reads the value back as it was.
                const real = realPulumi(p.dir);
                const written = await cli(["import-request", p.request, "--stack", "edge", "--project", p.dir], real.env);
                assert.equal(written.code, 0, written.err);
                // The CLI's YAML writer escapes what its reader refuses raw (it leaves U+202E, which YAML prints).
                assert.doesNotMatch(fs.readFileSync(p.stackFile, "utf8"), /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/);
                const read = real.pulumi(["config", "get", "--stack", "edge", "--path", "tacker.vimName"]);
                assert.equal(read.status, 0, read.stderr);
                assert.equal(read.stdout, `${vimName}\n`);
            } finally {
                p.cleanup();
            }
        });
    });

    describe("what reaches the terminal: no escape sequence, no control character, no line of a megabyte", () => {
        const CLEAR = "\u001b[2J";
        const long = (c: string) => CLEAR + c.repeat(MIB);
        const LINE_LIMIT = 1000;

        function assertTerminalSafe(run: Run): void {
            const all = run.out + run.err;
            assert.ok(!all.includes("\u001b"), "an ESC byte was printed");
            assert.doesNotMatch(all, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202e]/, "a control character was printed raw");
            const longest = Math.max(...all.split("\n").map((l) => l.length));
            assert.ok(longest <= LINE_LIMIT, `a line of ${longest} characters was printed`);
            assert.match(all, /\\x1b\[2J/, "escapes are shown");
            assert.doesNotMatch(all, SECRETS);
            assert.doesNotMatch(all, /^\s+at /m, "no stack trace");
        }

        function hostileRequest(p: ReturnType<typeof scratchProject>, name: string, change: (body: any) => void): string {
            const body = parseRequestText(fs.readFileSync(p.request, "utf8")) as any;
            change(body);
            const file = path.join(p.dir, name);
            fs.writeFileSync(file, JSON.stringify(body));
            return file;
        }

        it("unknown field names (refused by shape)", () => {
            const p = scratchProject();
            try {
                const file = hostileRequest(p, `req${CLEAR}.json`, (b) => {
                    b[long("k")] = 1;
                    b.additionalParams.k8s_cluster_installation_param[`${CLEAR}\u009b31m`] = 1;
                });
                const run = binary(["import-request", file, "--project", p.dir]);
                assert.equal(run.code, 1, run.err.slice(0, 2000));
                assertTerminalSafe(run);
                assert.match(run.err, /^ {2}- \\x1b\[2Jk{190,}… \[1048580 characters\]: unknown field$/m);
                assert.match(run.err, /k8s_cluster_installation_param\.\\x1b\[2J\\x9b31m: unknown field/);
            } finally {
                p.cleanup();
            }
        });

        it("values echoed in problems (refused by meaning), with the request file's name", () => {
            const p = scratchProject();
            try {
                const file = hostileRequest(p, `req${CLEAR}\n.json`, (b) => {
                    b.flavourId = long("f");
                    b.vimConnectionInfo[0].vimType = "\u001b]0;owned\u0007";
                });
                const run = binary(["import-request", file, "--project", p.dir]);
                assert.equal(run.code, 1, run.err.slice(0, 2000));
                assertTerminalSafe(run);
                assert.match(run.err, /^ {2}- flavourId: \\x1b\[2Jf{300,}… \[\d{7} characters\]$/m);
                assert.match(run.err, /vimConnectionInfo\[0\]\.vimType: \\x1b\]0;owned\\x07 is not an OpenStack VIM/);
            } finally {
                p.cleanup();
            }
        });

        it("a converted request: its reports, the printed config and its header", () => {
            const p = scratchProject();
            try {
                const file = hostileRequest(p, `req${CLEAR}.json`, (b) => {
                    b.additionalParams[long("p")] = "x";
                    b.additionalParams.k8s_cluster_installation_param.vim_name = `vim${CLEAR}\u009b2J`;
                });
                const run = binary(["import-request", file, "--project", p.dir]);
                assert.equal(run.code, 0, run.err.slice(0, 2000));
                assertTerminalSafe(run);
                assert.match(run.out, /^# Converted from req\\x1b\[2J\.json by k8s-vnf import-request\.$/m);
                assert.match(run.err, /^ {2}- additionalParams\.\\x1b\[2Jp{150,}… \[1048597 characters\]: not a parameter of this project$/m);
                assert.equal(YAML.parse(run.out).config["k8s-vnf:tacker"].vimName, `vim${CLEAR}\u009b2J`, "the printed config keeps the value, escaped");
            } finally {
                p.cleanup();
            }
        });
    });
});

