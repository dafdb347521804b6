/**
 * Seed 001's body as it is through the LCM service and Tacker's real `openstack vnflcm` client: the service
 * converts it with the instance's VNF package (which carries the kubespray release, `serve --packages`), and
 * each operation is a `pulumi up` of the real Pulumi CLI and plugins against the lab OpenStack API (the seed's
 * network, its VIM registered with the service at the lab's Keystone), with real Ansible on the Ansible VM the
 * stack creates and real HAProxy on the external load balancer. The kubespray release is the lab's stand-in
 * (kubespray.lab.spec.ts), whose kubeadm is the lab's stand-in too.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { packKubesprayRelease, parsePlaybookRuns } from "./support/kubesprayRelease";
import { skipAfterFirstFailure } from "./support/labSuite";
import { PROJECT_DIR } from "./support/program";
import { useRealLcmService } from "./support/realLcmService";
import { useBuiltTools } from "./support/tools";

/** The vnfdId seed 001's instance is created with: examples/package plus the kubespray release. */
const KUBESPRAY_VNFD = "6a1e0b9c-0001-4f2e-8c3d-9b8a7f6e5d01";
/** What seed 001 names: its VIM and its network. */
const SEED_VIM = "05ef7ca5-7e32-4a6b-a03d-52f811f04496";
const SEED_NETWORK = "b0b84da3-3259-4855-b4cd-5711ba5e5de1";

describe("seed 001 through the LCM service on the real Pulumi CLI, with the real openstack vnflcm client: kubespray on lab hosts", function () {
    useBuiltTools();
    this.timeout(600_000);
    const lcm = useRealLcmService({
        cluster: "ksl",
        networkId: SEED_NETWORK,
        vimIds: [SEED_VIM],
        realControlPlane: false,
        packages: async (dir) => {
            fs.cpSync(path.join(PROJECT_DIR, "examples/package"), path.join(dir, KUBESPRAY_VNFD), { recursive: true });
            packKubesprayRelease(path.join(dir, KUBESPRAY_VNFD));
        },
    });
    const { suite, openstack, seedFile } = lcm;
    let id = "";
    const settle = () => lcm.settle(id);
    const vnfcs = () => lcm.vnfcs(id) as Promise<{ id: string; vduId: string }[]>;
    const host = (suffix: string) => suite.lab.hostNames().find((n) => n.endsWith(suffix))!;
    const runs = async () => parsePlaybookRuns(await suite.lab.inside(host("-ansible"), "cat /opt/kubespray/.standin/runs.log"));

    skipAfterFirstFailure();

    it("instantiate (client) with seed 001's body as it is: the Ansible VM, the LB, cluster.yml; every VM but the Ansible server a VNFC", async () => {
        id = JSON.parse(await openstack("create", KUBESPRAY_VNFD, "--name", "vnf-kubespray", "-f", "json")).ID;
        assert.match(await openstack("instantiate", id, seedFile("kubespray-instantiate.json")), /has been accepted/);
        const op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        assert.deepEqual((await runs()).map((r) => r.playbook), ["cluster.yml"]);
        const ids = (await vnfcs()).map((v) => v.id);
        assert.ok(ids.some((v) => v.endsWith("-external-lb")) && !ids.some((v) => v.endsWith("-ansible")), ids.join(", "));
        assert.match(await suite.lab.inside(host("-external-lb"), "cat /etc/haproxy/haproxy.cfg"), /^frontend kube-apiserver$/m);
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
        assert.deepEqual(lcm.api.servers(), []);
        assert.deepEqual(suite.lab.hostNames(), []);
    });
});
