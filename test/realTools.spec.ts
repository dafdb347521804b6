/**
 * The real tools tools/build.sh built are the ones package.json pins (each binary's Go build info names the
 * modules it was built from), and the OpenStack plugin assembled
 * from its modules (tools/openstack: terraform-provider-openstack v1.54.1 through pulumi-terraform-bridge
 * v3.79.0, with our name mapping) speaks the names the @pulumi/openstack 3.15.2 SDK sends: for every
 * resource the program registers, the same type token, every input the SDK's Args can set and every output
 * its class reads. Each schema comes from the plugin itself (`pulumi package get-schema`). The lab's control
 * plane (kubeadm, the API server and etcd) is the Kubernetes release k8s-vnf installs by default, and its
 * kubeadm takes the configurations the program writes.
 */
import { strict as assert } from "node:assert";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { initConfiguration, joinConfiguration } from "../providers/kubernetes/kubeadm";
import { INIT_SETTINGS } from "./fixtures/kubeadmInit";
import { PROJECT_DIR } from "./support/program";
import { builtTools, realPulumiEnv, useBuiltTools } from "./support/tools";

const pkg = JSON.parse(fs.readFileSync(path.join(PROJECT_DIR, "package.json"), "utf8")).dependencies as Record<string, string>;

/**
 * The modules each pin is built from: pulumi-kubernetes tag v4.25.0 is commit f47bc2d6f199 (its provider module
 * has no tags of its own); pulumi-openstack v3.15.2's provider/go.mod requires terraform-provider-openstack
 * v1.54.1 and pulumi-terraform-bridge v3.79.0.
 */
const KUBERNETES_COMMIT: Record<string, string> = { "4.25.0": "f47bc2d6f199" };
const OPENSTACK_MODULES: Record<string, Record<string, string>> = {
    "3.15.2": { "github.com/terraform-provider-openstack/terraform-provider-openstack": "v1.54.1", "github.com/pulumi/pulumi-terraform-bridge/v3": "v3.79.0" },
};

/** The modules a Go binary was built from (`go version -m`): module path → version, the main module too. */
function buildInfo(binary: string): Record<string, string> {
    const out = execFileSync("go", ["version", "-m", binary], { encoding: "utf8", maxBuffer: 16 << 20 });
    return Object.fromEntries(
        out
            .split("\n")
            .map((l) => l.trim().split("\t"))
            .filter((f) => f[0] === "mod" || f[0] === "dep")
            .map((f) => [f[1], f[2]]),
    );
}

/** The resource classes of @pulumi/openstack the program registers, by module file. */
const PROGRAM_RESOURCES = ["blockstorage/volume", "compute/instance", "compute/keypair", "compute/serverGroup", "compute/volumeAttach", "networking/floatingIp", "networking/port", "networking/secGroup", "networking/secGroupRule"];

/** The members of `export interface NAME {...}` in an SDK declaration file. */
function interfaceMembers(declarations: string, name: string): string[] {
    const start = declarations.indexOf(`export interface ${name} {`);
    assert.ok(start >= 0, `${name} in the SDK`);
    const body = declarations.slice(start, declarations.indexOf("\n}", start));
    return [...body.matchAll(/^ {4}(\w+)\??: /gm)].map((m) => m[1]);
}

/** The output properties `export declare class NAME` declares (`readonly x: pulumi.Output<...>`). */
function classOutputs(declarations: string, name: string): string[] {
    const start = declarations.indexOf(`export declare class ${name} `);
    const body = declarations.slice(start, declarations.indexOf("\n}", start));
    return [...body.matchAll(/^ {4}readonly (\w+)!?: pulumi\.Output</gm)].map((m) => m[1]);
}

describe("the real tools: the versions package.json pins; the OpenStack plugin's schema against the @pulumi/openstack SDK", function () {
    useBuiltTools();
    this.timeout(120_000);
    let home: string;
    let env: Record<string, string>;

    before(() => {
        home = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-tools-"));
        env = realPulumiEnv(home, "unused");
    });
    after(() => fs.rmSync(home, { recursive: true, force: true }));

    const binary = (name: string) => {
        const file = Object.values(builtTools().bins).map((d) => path.join(d, name)).find((f) => fs.existsSync(f));
        assert.ok(file, `${name} built`);
        return file!;
    };
    const schemaOf = (plugin: string) => JSON.parse(execFileSync("pulumi", ["package", "get-schema", binary(`pulumi-resource-${plugin}`)], { env, cwd: home, maxBuffer: 256 << 20, encoding: "utf8" }));

    it("the Pulumi CLI is built from pkg/v3 and sdk/v3 at the version @pulumi/pulumi pins, and says so", () => {
        const info = buildInfo(binary("pulumi"));
        assert.equal(info["github.com/pulumi/pulumi/pkg/v3"], `v${pkg["@pulumi/pulumi"]}`);
        assert.equal(info["github.com/pulumi/pulumi/sdk/v3"], `v${pkg["@pulumi/pulumi"]}`);
        assert.equal(execFileSync("pulumi", ["version"], { env, encoding: "utf8" }).trim(), `v${pkg["@pulumi/pulumi"]}`);
    });

    it("the language host is sdk/v3 v3.68.0's (the newest release served with it inside sdk/v3; docs/testing.md)", () => {
        assert.equal(buildInfo(binary("pulumi-language-nodejs"))["github.com/pulumi/pulumi/sdk/v3"], "v3.68.0");
    });

    it("the Kubernetes plugin is built from the provider module at the commit of @pulumi/kubernetes's tag, and serves that version", () => {
        const version = pkg["@pulumi/kubernetes"];
        const info = buildInfo(binary("pulumi-resource-kubernetes"));
        assert.ok(KUBERNETES_COMMIT[version], `the commit of pulumi-kubernetes v${version} is known here`);
        assert.match(info["github.com/pulumi/pulumi-kubernetes/provider/v4"], new RegExp(`-${KUBERNETES_COMMIT[version]}$`));
        assert.equal(info["github.com/pulumi/pulumi-kubernetes/sdk/v4"], `v${version}`);
        assert.equal(schemaOf("kubernetes").version, version);
    });

    it("the OpenStack plugin is built from the modules pulumi-openstack's release of @pulumi/openstack's pin requires", () => {
        const wanted = OPENSTACK_MODULES[pkg["@pulumi/openstack"]];
        assert.ok(wanted, `the modules of pulumi-openstack v${pkg["@pulumi/openstack"]} are known here`);
        const info = buildInfo(binary("pulumi-resource-openstack"));
        for (const [module, version] of Object.entries(wanted)) assert.equal(info[module], version, module);
    });

    it("the lab's control plane is Kubernetes at kubernetes.version's default, its staging modules published ones, with the etcd its kubeadm runs", () => {
        const version = /version: kubernetesVersion\.default\("([0-9.]+)"\)/.exec(fs.readFileSync(path.join(PROJECT_DIR, "config/schema.ts"), "utf8"))![1];
        for (const command of ["kubeadm", "kubectl", "kube-apiserver", "kube-controller-manager", "kube-scheduler"]) {
            const info = buildInfo(binary(command));
            assert.equal(info["k8s.io/kubernetes"], `v${version}`, command);
            assert.equal(info["k8s.io/client-go"], `v0.${version.split(".").slice(1).join(".")}`, `${command}: client-go`);
        }
        assert.equal(execFileSync(binary("kubeadm"), ["version", "-o", "short"], { encoding: "utf8" }).trim(), `v${version}`);
        assert.match(execFileSync(binary("kube-apiserver"), ["--version"], { encoding: "utf8" }), new RegExp(`^Kubernetes v${version.replace(/\./g, "\\.")}\n`));
        const kubeadmConstants = fs.readFileSync(path.join(execFileSync("go", ["env", "GOMODCACHE"], { encoding: "utf8" }).trim(), `k8s.io/kubernetes@v${version}/cmd/kubeadm/app/constants/constants.go`), "utf8");
        const etcd = /DefaultEtcdVersion = "([0-9.]+)-0"/.exec(kubeadmConstants)![1];
        assert.equal(buildInfo(binary("etcd"))["go.etcd.io/etcd/server/v3"], `v${etcd}`);
        assert.match(execFileSync(binary("etcd"), ["--version"], { encoding: "utf8" }), new RegExp(`^etcd Version: ${etcd.replace(/\./g, "\\.")}\n`));
    });

    it("the real kubeadm accepts the configurations the program writes (init, worker join, control-plane join), strictly decoded; a misspelt field it refuses", () => {
        const kubeadm = path.join(builtTools().bins.kube, "kubeadm");
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-kubeadm-config-"));
        const validate = (config: string) => {
            const file = path.join(dir, "config.yaml");
            fs.writeFileSync(file, config);
            return execFileSync(kubeadm, ["config", "validate", "--config", file], { encoding: "utf8", stdio: "pipe" });
        };
        try {
            const credentials = { token: "abcdef.0123456789abcdef", caCertHash: `sha256:${"c".repeat(64)}`, certificateKey: "d".repeat(64) };
            assert.match(validate(initConfiguration({ ...INIT_SETTINGS, certSans: ["10.0.0.100"] })), /^ok$/m);
            assert.match(validate(initConfiguration({ ...INIT_SETTINGS, imageRepository: "registry.example:5000/k8s" })), /^ok$/m);
            assert.match(validate(joinConfiguration({ nodeName: "w-0", endpoint: INIT_SETTINGS.endpoint }, credentials)), /^ok$/m);
            assert.match(validate(joinConfiguration({ nodeName: "m-1", endpoint: INIT_SETTINGS.endpoint, controlPlane: { address: "10.0.0.6", apiServerPort: 6443 } }, credentials)), /^ok$/m);
            assert.throws(() => validate(initConfiguration(INIT_SETTINGS).replace("kubernetesAPICall", "kubernetesAPICal")), /unknown field "timeouts.kubernetesAPICal"/);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    it("the lab's kubeadm stand-in lists the images the real kubeadm lists (the pause image node preparation gives containerd), for the default repository and another", () => {
        const kubeadm = path.join(builtTools().bins.kube, "kubeadm");
        const standIn = path.join(PROJECT_DIR, "test/lab/stand-ins/bin/kubeadm");
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-kubeadm-standin-"));
        // The stand-in's libraries are installed on lab hosts only: here, from the tree, its state in `dir`.
        const lib = path.join(PROJECT_DIR, "test/lab/stand-ins");
        fs.writeFileSync(path.join(dir, "common.sh"), fs.readFileSync(path.join(lib, "common.sh"), "utf8").replace(/^STATE=.*$/m, `STATE=${dir}/state`));
        const sources: Record<string, string> = { "common.sh": path.join(dir, "common.sh"), "static-pods.sh": path.join(lib, "lib/static-pods.sh") };
        const script = fs.readFileSync(standIn, "utf8").replace(/^source \/usr\/local\/lib\/k8s-standin\/(\S+)$/gm, (_l, file: string) => `source ${sources[file]}`);
        try {
            for (const repository of [[], ["--image-repository", "registry.example:5000/k8s"]]) {
                const args = ["config", "images", "list", "--kubernetes-version", INIT_SETTINGS.kubernetesVersion.replace(/^/, "v"), ...repository];
                const real = execFileSync(kubeadm, args, { encoding: "utf8" });
                const modelled = execFileSync("bash", ["-c", script, "kubeadm", ...args], { encoding: "utf8" });
                assert.equal(modelled, real, args.join(" "));
            }
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    it("the OpenStack plugin names each resource, input and output of the program's resources as @pulumi/openstack does", () => {
        const schema = schemaOf("openstack");
        assert.equal(schema.version, pkg["@pulumi/openstack"]);
        for (const file of PROGRAM_RESOURCES) {
            const js = fs.readFileSync(path.join(PROJECT_DIR, "node_modules/@pulumi/openstack", `${file}.js`), "utf8");
            const token = /__pulumiType = '([^']+)'/.exec(js)![1];
            const resource = schema.resources[token];
            assert.ok(resource, `the plugin serves ${token}`);
            const dts = fs.readFileSync(path.join(PROJECT_DIR, "node_modules/@pulumi/openstack", `${file}.d.ts`), "utf8");
            const className = /export declare class (\w+) extends pulumi\.CustomResource/.exec(dts)![1];
            const inputs = interfaceMembers(dts, `${className}Args`);
            assert.ok(inputs.length >= 2, `${token}: the SDK's inputs read (${inputs.join(", ")})`);
            assert.deepEqual(inputs.filter((k) => !(k in resource.inputProperties)), [], `${token}: inputs the plugin does not know`);
            const outputs = classOutputs(dts, className);
            assert.ok(outputs.length >= inputs.length, `${token}: the SDK's outputs read (${outputs.join(", ")})`);
            assert.deepEqual(outputs.filter((k) => !(k in resource.properties)), [], `${token}: outputs the plugin does not give`);
        }
    });
});
