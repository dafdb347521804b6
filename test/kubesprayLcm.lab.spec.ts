/**
 * Seed 001's body as it is through the LCM service and Tacker's real `openstack vnflcm` client: the service
 * converts it with the instance's VNF package (which carries the kubespray release, `serve --packages`), and
 * each operation is a `pulumi up` of the stand-in Pulumi CLI running the real program on lab hosts, with real
 * Ansible on the Ansible VM the stack creates and real HAProxy on the external load balancer.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseRequestText } from "../config/requestText";
import { Lab, labAvailable } from "./lab/lab";
import { REQUESTS_DIR } from "./support/fixtures";
import { clientAvailable, vnflcmClient } from "./support/lcmClient";
import { packKubesprayRelease, parsePlaybookRuns } from "./support/kubesprayRelease";
import { PROJECT_DIR } from "./support/program";
import { ServiceProcess } from "./support/serviceProcess";
import { ServiceProject, serviceProject } from "./support/serviceProject";
import { STAND_IN_PULUMI_ROOT } from "./support/stand-ins/pulumi-cli/client";

/** The vnfdId seed 001's instance is created with: examples/package plus the kubespray release. */
const KUBESPRAY_VNFD = "6a1e0b9c-0001-4f2e-8c3d-9b8a7f6e5d01";

describe("seed 001 through the LCM service with the real openstack vnflcm client: kubespray on lab hosts", function () {
    this.timeout(600_000);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-lcm-kubespray-"));
    const packagesDir = path.join(dataDir, "packages");
    let lab: Lab;
    let project: ServiceProject;
    let service: ServiceProcess;
    let id = "";
    const openstack = vnflcmClient(() => service.url);
    const json = async (...args: string[]) => JSON.parse(await openstack(...args, "-f", "json"));
    const api = (method: string, route: string, body?: unknown) => service.call(method, route, body);
    const settle = async () => {
        for (let i = 0; i < 2400; i++) {
            const last = (await api("GET", "/vnflcm/v1/vnf_lcm_op_occs?all_fields")).body.filter((o: any) => o.vnfInstanceId === id).at(-1);
            if (last && !["STARTING", "PROCESSING", "ROLLING_BACK"].includes(last.operationState)) return last;
            await new Promise((r) => setTimeout(r, 250));
        }
        assert.fail("the operation did not finish");
    };
    const host = (suffix: string) => lab.hostNames().find((n) => n.endsWith(suffix))!;
    const runs = async () => parsePlaybookRuns(await lab.inside(host("-ansible"), "cat /opt/kubespray/.standin/runs.log"));
    const vnfcs = async () => (await api("GET", `/vnflcm/v1/vnf_instances/${id}`)).body.instantiatedVnfInfo.vnfcResourceInfo as { id: string; vduId: string }[];
    /** A request file for the client: the seed's body (strict JSON), the lab's login in place of the seed's `ubuntu`. */
    const requestFile = (name: string) => {
        const text = fs.readFileSync(path.join(REQUESTS_DIR, name), "utf8").replace(/("(?:ssh_)?password"\s*:\s*)"ubuntu"/g, (_m, key) => `${key}${JSON.stringify(lab.password)}`);
        const body = parseRequestText(text, name) as Record<string, unknown>;
        delete body.vimConnectionInfo; // the service's own OpenStack credentials (none: the lab's cloud)
        const file = path.join(dataDir, name);
        fs.writeFileSync(file, JSON.stringify(body));
        return file;
    };

    before(async function () {
        if (!clientAvailable()) {
            if (process.env.CI) assert.fail("the openstack client is missing; .ci/run installs python3-openstackclient and python3-tackerclient");
            this.skip();
        }
        const available = labAvailable();
        if (!available.ok) {
            if (process.env.CI) assert.fail(`lab hosts cannot run: ${available.why}`);
            this.skip();
        }
        lab = new Lab();
        await lab.start([]);
        fs.cpSync(path.join(PROJECT_DIR, "examples/package"), path.join(packagesDir, KUBESPRAY_VNFD), { recursive: true });
        packKubesprayRelease(path.join(packagesDir, KUBESPRAY_VNFD));
        project = serviceProject();
        const knobs = path.join(dataDir, "pulumi-standin");
        fs.mkdirSync(knobs);
        const env = { K8S_VNF_PULUMI_ROOT: STAND_IN_PULUMI_ROOT, PULUMI_STANDIN_STATE: knobs, PULUMI_CONFIG_PASSPHRASE: "test-passphrase", K8S_VNF_LAB: lab.descriptorFile };
        service = await ServiceProcess.start(dataDir, env, ["--project", project.dir, "--packages", packagesDir]);
    });
    after(async () => {
        await service?.stop();
        const secrets = [lab?.password, lab?.privateKey].filter(Boolean) as string[];
        await lab?.stop();
        project?.remove();
        const output = service?.output ?? "";
        fs.rmSync(dataDir, { recursive: true, force: true });
        assert.deepEqual(secrets.filter((s) => output.includes(s)), [], "no login secret in the service's output");
    });

    it("instantiate (client) with seed 001's body as it is: the Ansible VM, the LB, cluster.yml; every VM but the Ansible server a VNFC", async () => {
        id = (await json("create", KUBESPRAY_VNFD, "--name", "vnf-kubespray")).ID;
        assert.match(await openstack("instantiate", id, requestFile("kubespray-instantiate.json")), /has been accepted/);
        const op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        assert.deepEqual((await runs()).map((r) => r.playbook), ["cluster.yml"]);
        const ids = (await vnfcs()).map((v) => v.id);
        assert.ok(ids.some((v) => v.endsWith("-external-lb")) && !ids.some((v) => v.endsWith("-ansible")), ids.join(", "));
        assert.match(await lab.inside(host("-external-lb"), "cat /etc/haproxy/haproxy.cfg"), /^frontend kube-apiserver$/m);
    });

    it("scale out (client): facts.yml, then scale.yml limited to the new worker; reported ADDED", async () => {
        const before = (await runs()).length;
        await openstack("scale", "--type", "SCALE_OUT", "--aspect-id", "worker_instance", id);
        const op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        const added = op.resourceChanges.affectedVnfcs.filter((v: { changeType: string }) => v.changeType === "ADDED").map((v: { id: string }) => v.id);
        assert.equal(added.length, 1);
        assert.deepEqual((await runs()).slice(before).map((r) => [r.playbook, r.limit]), [["playbooks/facts.yml", null], ["scale.yml", added[0]]]);
    });

    it("heal of a worker VNFC (client): remove-node.yml for it, a new VM, scale.yml limited to it; reported MODIFIED", async () => {
        const worker = (await vnfcs()).find((v) => v.vduId === "workerNode")!.id;
        const before = (await runs()).length;
        await openstack("heal", "--vnfc-instance", worker, "--", id);
        const op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        assert.deepEqual((await runs()).slice(before).map((r) => [r.playbook, r.limit ?? r.vars.node]), [["remove-node.yml", worker], ["playbooks/facts.yml", null], ["scale.yml", worker]]);
        assert.deepEqual(op.resourceChanges.affectedVnfcs.map((v: { id: string; changeType: string }) => [v.id, v.changeType]), [[worker, "MODIFIED"]]);
    });

    it("terminate (client): every VM goes, the Ansible server with it", async () => {
        await openstack("terminate", id);
        const op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        assert.deepEqual(lab.hostNames(), []);
    });
});
