import { strict as assert } from "node:assert";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as YAML from "yaml";
import { ConfigError } from "../config/spec";
import { CnfVnfd, readCnfVnfd, VNFD_FILE_LIMIT } from "../config/vnfd";
import { PROJECT_DIR } from "./support/program";

const SAMPLE = path.join(PROJECT_DIR, "examples/cnf-package");
const FIXTURES = path.join(PROJECT_DIR, "test/fixtures/vnfd");

function refusal(packageDir: string, flavourId?: string): ConfigError {
    try {
        readCnfVnfd(packageDir, flavourId);
    } catch (e) {
        if (e instanceof ConfigError) return e;
        throw e;
    }
    assert.fail("the VNFD was accepted");
}

/** Paths and messages of a refusal, for one assert that shows all of them when it fails. */
function problems(packageDir: string, flavourId?: string): string[] {
    return refusal(packageDir, flavourId).problems.map((p) => `${p.path} :: ${p.message}`);
}

function assertProblem(found: string[], pathText: string, message: RegExp): void {
    const hit = found.find((p) => p.startsWith(`${pathText} :: `));
    assert.ok(hit, `no problem at ${pathText}; got:\n${found.join("\n")}`);
    assert.match(hit, message);
}

describe("CNF VNFD reader", () => {
    describe("the sample CNF package (examples/cnf-package)", () => {
        const k8sDir = path.join(SAMPLE, "Files/kubernetes");
        const manifests = fs.readdirSync(k8sDir).map((file) => ({ file, doc: YAML.parse(fs.readFileSync(path.join(k8sDir, file), "utf8")) }));

        it("reads to VDU1 = Deployment vdu1 scaled by vdu1_aspect, VDU2 = the Pod", () => {
            const expected: CnfVnfd = {
                flavourId: "simple",
                vdus: [{ vduId: "VDU1", name: "vdu1" }, { vduId: "VDU2", name: "vdu2" }],
                aspects: [{ aspectId: "vdu1_aspect", maxScaleLevel: 2, deltas: [{ vduId: "VDU1", instances: 1 }] }],
                initialInstances: { VDU1: 1, VDU2: 1 },
            };
            assert.deepEqual(readCnfVnfd(SAMPLE), expected);
            assert.deepEqual(readCnfVnfd(SAMPLE, "simple"), expected);
        });

        it("has the seed's Files/kubernetes/pod.yaml, a bare Pod that is VDU2", () => {
            const pod = manifests.find((m) => m.file === "pod.yaml")?.doc;
            assert.equal(pod?.kind, "Pod");
            assert.equal(pod.metadata.name, readCnfVnfd(SAMPLE)!.vdus.find((v) => v.vduId === "VDU2")!.name);
        });

        it("each VDU is one workload; the scaled one is a Deployment whose replicas are its initial delta", () => {
            const vnfd = readCnfVnfd(SAMPLE)!;
            for (const vdu of vnfd.vdus) {
                const workloads = manifests.filter((m) => ["Pod", "Deployment", "DaemonSet", "StatefulSet", "ReplicaSet"].includes(m.doc.kind) && m.doc.metadata.name === vdu.name);
                assert.equal(workloads.length, 1, `${vdu.vduId} (${vdu.name}) is one workload`);
            }
            const deployment = manifests.find((m) => m.file === "deployment.yaml")!.doc;
            assert.equal(deployment.kind, "Deployment");
            assert.equal(deployment.metadata.name, "vdu1");
            assert.equal(deployment.spec.replicas, vnfd.initialInstances.VDU1);
        });

        it("manifests set no namespace (the request's namespace applies) and pass Kubernetes' validation rules", () => {
            assert.deepEqual(manifests.map((m) => m.file).sort(), ["deployment.yaml", "pod.yaml", "service.yaml"]);
            for (const { file, doc } of manifests) {
                assert.equal(doc.metadata.namespace, undefined, `${file} sets no namespace`);
                assert.deepEqual(kubernetesProblems(doc), [], file);
            }
        });

        it("is valid TOSCA as Tacker's samples are: imports resolve, every type used is defined", () => {
            const defs = path.join(SAMPLE, "Definitions");
            const docs = fs.readdirSync(defs).map((f) => ({ f, doc: YAML.parse(fs.readFileSync(path.join(defs, f), "utf8")) }));
            const defined = new Set(docs.flatMap(({ doc }) => ["node_types", "policy_types", "data_types", "interface_types"].flatMap((k) => Object.keys(doc[k] ?? {}))));
            for (const { f, doc } of docs) {
                assert.equal(doc.tosca_definitions_version, "tosca_simple_yaml_1_2", f);
                for (const imported of doc.imports ?? []) assert.ok(fs.existsSync(path.join(defs, imported)), `${f} imports ${imported}`);
                for (const [name, node] of Object.entries<any>(doc.topology_template?.node_templates ?? {})) assert.ok(defined.has(node.type), `${f}: ${name} is of type ${node.type}`);
                for (const entry of doc.topology_template?.policies ?? []) {
                    for (const [name, policy] of Object.entries<any>(entry)) assert.ok(defined.has(policy.type), `${f}: ${name} is of type ${policy.type}`);
                }
                for (const [name, type] of Object.entries<any>(doc.node_types ?? {})) {
                    assert.ok(type.derived_from === "tosca.nodes.Root" || defined.has(type.derived_from), `${f}: ${name} derives from a defined type`);
                }
            }
        });

        it("TOSCA.meta names the entry VNFD and the SHA-256 of each manifest", () => {
            const blocks = fs.readFileSync(path.join(SAMPLE, "TOSCA-Metadata/TOSCA.meta"), "utf8").split(/\n\n+/).map((b) => YAML.parse(b));
            assert.ok(fs.existsSync(path.join(SAMPLE, blocks[0]["Entry-Definitions"])));
            const listed = blocks.slice(1);
            assert.deepEqual(listed.map((b) => b.Name).sort(), manifests.map((m) => `Files/kubernetes/${m.file}`).sort());
            for (const b of listed) {
                assert.equal(b.Algorithm, "SHA-256");
                assert.equal(b.Hash, createHash("sha256").update(fs.readFileSync(path.join(SAMPLE, b.Name))).digest("hex"), `hash of ${b.Name}`);
            }
        });
    });

    describe("Tacker's sample VNFDs (test/fixtures/vnfd)", () => {
        const scale = path.join(FIXTURES, "tacker-cnf-scale");

        it("test_cnf_scale, flavour simple: vdu1-scale, one instance a step, up to level 2", () => {
            assert.deepEqual(readCnfVnfd(scale, "simple"), {
                flavourId: "simple",
                vdus: [{ vduId: "VDU1", name: "vdu1-scale" }],
                aspects: [{ aspectId: "vdu1_aspect", maxScaleLevel: 2, deltas: [{ vduId: "VDU1", instances: 1 }] }],
                initialInstances: { VDU1: 1 },
            });
        });

        it("test_cnf_scale, flavour scalingsteps: that flavour's file, two instances a step", () => {
            const vnfd = readCnfVnfd(scale, "scalingsteps")!;
            assert.equal(vnfd.flavourId, "scalingsteps");
            assert.deepEqual(vnfd.aspects, [{ aspectId: "vdu1_aspect", maxScaleLevel: 2, deltas: [{ vduId: "VDU1", instances: 2 }] }]);
        });

        it("with two flavours, one must be named, and it must exist", () => {
            assertProblem(problems(scale), "Definitions", /several deployment flavours.*"scalingsteps" \(Definitions\/helloworld3_df_scalingsteps\.yaml\).*"simple"/);
            assertProblem(problems(scale, "complex"), "Definitions", /no deployment flavour "complex"/);
        });

        it("sol_kubernetes_v2 test_instantiate_cnf_resources: five VDUs, three aspects, initial deltas only where given", () => {
            assert.deepEqual(readCnfVnfd(path.join(FIXTURES, "tacker-cnf-resources"), "simple"), {
                flavourId: "simple",
                vdus: ["VDU1", "VDU2", "VDU3", "VDU5", "VDU6"].map((vduId) => ({ vduId, name: vduId.toLowerCase() })),
                aspects: ["VDU2", "VDU3", "VDU5"].map((vduId) => ({ aspectId: `${vduId.toLowerCase()}_aspect`, maxScaleLevel: 2, deltas: [{ vduId, instances: 1 }] })),
                initialInstances: { VDU2: 2, VDU3: 1, VDU5: 1 },
            });
        });
    });

    describe("refusals name the file and the field", () => {
        let dir: string;
        beforeEach(() => {
            dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-vnfd-"));
            fs.mkdirSync(path.join(dir, "Definitions"));
        });
        afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

        const DF = "Definitions/df.yaml";
        const DELTAS = `${DF}: topology_template.policies[2].VDU1_scaling_aspect_deltas`;
        const INITIAL = `${DF}: topology_template.policies[1].VDU1_initial_delta`;

        /** A valid deployment flavour, in the shape of Tacker's samples, for each test to break one thing of. */
        function df(): any {
            return {
                tosca_definitions_version: "tosca_simple_yaml_1_2",
                topology_template: {
                    substitution_mappings: { node_type: "company.provider.VNF", properties: { flavour_id: "simple" } },
                    node_templates: {
                        VNF: { type: "company.provider.VNF", properties: { flavour_description: "A simple flavour" } },
                        VDU1: { type: "tosca.nodes.nfv.Vdu.Compute", properties: { name: "vdu1", description: "d", vdu_profile: { min_number_of_instances: 1, max_number_of_instances: 3 } } },
                        VDU2: { type: "tosca.nodes.nfv.Vdu.Compute", properties: { name: "vdu2", description: "d", vdu_profile: { min_number_of_instances: 1, max_number_of_instances: 1 } } },
                    },
                    policies: [
                        { scaling_aspects: { type: "tosca.policies.nfv.ScalingAspects", properties: { aspects: { vdu1_aspect: { name: "vdu1_aspect", description: "d", max_scale_level: 2, step_deltas: ["delta_1"] } } } } },
                        { VDU1_initial_delta: { type: "tosca.policies.nfv.VduInitialDelta", properties: { initial_delta: { number_of_instances: 1 } }, targets: ["VDU1"] } },
                        { VDU1_scaling_aspect_deltas: { type: "tosca.policies.nfv.VduScalingAspectDeltas", properties: { aspect: "vdu1_aspect", deltas: { delta_1: { number_of_instances: 1 } } }, targets: ["VDU1"] } },
                    ],
                },
            };
        }
        const deltas = (doc: any) => doc.topology_template.policies[2].VDU1_scaling_aspect_deltas;
        const initial = (doc: any) => doc.topology_template.policies[1].VDU1_initial_delta;

        function write(doc: unknown, file = "df.yaml"): void {
            fs.writeFileSync(path.join(dir, "Definitions", file), typeof doc === "string" ? doc : YAML.stringify(doc));
        }

        it("the unbroken flavour is read (so each refusal below is the one change's doing)", () => {
            write(df());
            assert.deepEqual(readCnfVnfd(dir), {
                flavourId: "simple",
                vdus: [{ vduId: "VDU1", name: "vdu1" }, { vduId: "VDU2", name: "vdu2" }],
                aspects: [{ aspectId: "vdu1_aspect", maxScaleLevel: 2, deltas: [{ vduId: "VDU1", instances: 1 }] }],
                initialInstances: { VDU1: 1 },
            });
        });

        it("a package without Definitions/ has no VNFD", () => {
            fs.rmdirSync(path.join(dir, "Definitions"));
            assert.equal(readCnfVnfd(dir), undefined);
        });

        it("scaling deltas without targets", () => {
            const doc = df();
            delete deltas(doc).targets;
            write(doc);
            assertProblem(problems(dir), `${DELTAS}.targets`, /must list the VDUs/);
        });

        it("scaling deltas for an unknown aspect", () => {
            const doc = df();
            deltas(doc).properties.aspect = "vdu9_aspect";
            write(doc);
            assertProblem(problems(dir), `${DELTAS}.properties.aspect`, /"vdu9_aspect" is not an aspect .*declared: vdu1_aspect/);
        });

        it("a number_of_instances that is not a number, in a delta and in an initial delta", () => {
            const doc = df();
            deltas(doc).properties.deltas.delta_1.number_of_instances = "two";
            initial(doc).properties.initial_delta.number_of_instances = 1.5;
            write(doc);
            const found = problems(dir);
            assertProblem(found, `${DELTAS}.properties.deltas.delta_1.number_of_instances`, /whole number of at least 0, not "two"/);
            assertProblem(found, `${INITIAL}.properties.initial_delta.number_of_instances`, /not 1\.5/);
        });

        it("a VDU without properties.name, and one whose name no workload can have", () => {
            const doc = df();
            delete doc.topology_template.node_templates.VDU1.properties.name;
            doc.topology_template.node_templates.VDU2.properties.name = "VDU_2";
            write(doc);
            const found = problems(dir);
            assertProblem(found, `${DF}: topology_template.node_templates.VDU1.properties.name`, /must be the name of the Kubernetes workload/);
            assertProblem(found, `${DF}: topology_template.node_templates.VDU2.properties.name`, /"VDU_2" can never match/);
            assert.equal(found.length, 2, `the policies naming VDU1 are not refused too:\n${found.join("\n")}`);
        });

        it("a file that is not YAML, and one that is YAML but no template", () => {
            write(df());
            write("topology_template: [unclosed\n  key: : :\n", "broken.yaml");
            write("- a list\n", "list.yml");
            write("not read: a .txt file\n: :", "notes.txt");
            const found = problems(dir);
            assertProblem(found, "Definitions/broken.yaml", /is not valid YAML/);
            assertProblem(found, "Definitions/list.yml", /not a TOSCA service template/);
            assert.equal(found.length, 2, found.join("\n"));
        });

        it("an oversized file is refused unread", () => {
            write(df());
            fs.writeFileSync(path.join(dir, "Definitions/big.yaml"), Buffer.alloc(VNFD_FILE_LIMIT + 1, "#"));
            assertProblem(problems(dir), "Definitions/big.yaml", /is 1 MiB, more than the 1 MiB/);
        });

        it("a file linking outside the package", () => {
            write(df());
            const outside = path.join(os.tmpdir(), `k8s-vnf-vnfd-outside-${process.pid}.yaml`);
            fs.writeFileSync(outside, "secret: [\n");
            try {
                fs.symlinkSync(outside, path.join(dir, "Definitions/link.yaml"));
                const found = problems(dir);
                assertProblem(found, "Definitions/link.yaml", /leads outside the package/);
                assert.ok(!found.some((p) => p.includes("secret")));
            } finally {
                fs.rmSync(outside);
            }
        });

        it("the aspect's step delta missing from the deltas, and a zero step", () => {
            const doc = df();
            deltas(doc).properties.deltas = { delta_2: { number_of_instances: 1 } };
            write(doc);
            assertProblem(problems(dir), `${DELTAS}.properties.deltas`, /has no delta delta_1, the step delta of aspect vdu1_aspect/);
            deltas(doc).properties.deltas = { delta_1: { number_of_instances: 0 } };
            write(doc);
            assertProblem(problems(dir), `${DELTAS}.properties.deltas.delta_1.number_of_instances`, /at least 1/);
        });

        it("non-uniform step deltas, and a max_scale_level below 0", () => {
            const doc = df();
            const aspect = doc.topology_template.policies[0].scaling_aspects.properties.aspects.vdu1_aspect;
            aspect.step_deltas = ["delta_1", "delta_2"];
            aspect.max_scale_level = -1;
            write(doc);
            const found = problems(dir);
            const at = `${DF}: topology_template.policies[0].scaling_aspects.properties.aspects.vdu1_aspect`;
            assertProblem(found, `${at}.step_deltas`, /different deltas \(delta_1, delta_2\)/);
            assertProblem(found, `${at}.max_scale_level`, /at least 0, not -1/);
        });

        it("a scaled VDU without an initial delta; targets that are no VDU", () => {
            const doc = df();
            doc.topology_template.policies.splice(1, 1, { other: { type: "tosca.policies.nfv.AntiAffinityRule", properties: { scope: "nfvi_node" }, targets: ["VDU1"] } });
            deltas(doc).targets = ["VDU1", "VNF", "VDU9"];
            write(doc);
            const found = problems(dir);
            assertProblem(found, `${DELTAS}.targets[0]`, /VDU1 is scaled but has no tosca\.policies\.nfv\.VduInitialDelta/);
            assertProblem(found, `${DELTAS}.targets[1]`, /"VNF" is not a tosca\.nodes\.nfv\.Vdu\.Compute/);
            assertProblem(found, `${DELTAS}.targets[2]`, /"VDU9" is not/);
        });

        it("one VDU scaled by two aspects, or given two initial deltas", () => {
            const doc = df();
            doc.topology_template.policies[0].scaling_aspects.properties.aspects.other_aspect = { name: "o", description: "d", max_scale_level: 1, step_deltas: ["d1"] };
            doc.topology_template.policies.push(
                { other_deltas: { type: "tosca.policies.nfv.VduScalingAspectDeltas", properties: { aspect: "other_aspect", deltas: { d1: { number_of_instances: 1 } } }, targets: ["VDU1"] } },
                { again: { type: "tosca.policies.nfv.VduInitialDelta", properties: { initial_delta: { number_of_instances: 2 } }, targets: ["VDU1"] } },
            );
            write(doc);
            const found = problems(dir);
            assertProblem(found, `${DF}: topology_template.policies[3].other_deltas.targets`, /VDU1 is already scaled by aspect vdu1_aspect/);
            assertProblem(found, `${DF}: topology_template.policies[4].again.targets`, /VDU1 already has an initial delta in VDU1_initial_delta/);
        });

        it("two VDUs named after one workload", () => {
            const doc = df();
            doc.topology_template.node_templates.VDU2.properties.name = "vdu1";
            write(doc);
            assertProblem(problems(dir), `${DF}: topology_template.node_templates.VDU2.properties.name`, /is the name of VDU VDU1 too/);
        });

        it("no file naming a flavour, or two naming the same one", () => {
            const doc = df();
            write(doc, "copy.yaml");
            write(doc);
            assertProblem(problems(dir), `${DF}: topology_template.substitution_mappings.properties.flavour_id`, /"simple" is described by Definitions\/copy\.yaml too/);
            fs.rmSync(path.join(dir, "Definitions/copy.yaml"));
            delete doc.topology_template.substitution_mappings;
            write(doc);
            assertProblem(problems(dir), "Definitions", /no file describes a deployment flavour/);
        });

        it("only nodes of type tosca.nodes.nfv.Vdu.Compute itself are VDUs, as Tacker matches the type", () => {
            const doc = df();
            doc.topology_template.node_templates.VDU3 = { type: "company.provider.Vdu.Compute", properties: { name: "vdu3" } };
            doc.topology_template.node_templates.VDU1_storage = { type: "tosca.nodes.nfv.Vdu.VirtualBlockStorage", properties: {} };
            write(doc);
            assert.deepEqual(readCnfVnfd(dir)!.vdus.map((v) => v.vduId), ["VDU1", "VDU2"]);
        });

        it("YAML is read as PyYAML reads it (YAML 1.1): `yes` is a boolean, `0o1` a string", () => {
            const doc = df();
            doc.topology_template.node_templates.VDU2.properties.name = "NAME_HERE";
            deltas(doc).properties.deltas.delta_1.number_of_instances = "COUNT_HERE";
            const text = YAML.stringify(doc).replace("NAME_HERE", "yes").replace("COUNT_HERE", "0o1");
            write(text);
            const found = problems(dir);
            assertProblem(found, `${DF}: topology_template.node_templates.VDU2.properties.name`, /must be the name/);
            assertProblem(found, `${DELTAS}.properties.deltas.delta_1.number_of_instances`, /not "0o1"/);
        });

        it("policies as one mapping, as Tacker also takes them", () => {
            const doc = df();
            doc.topology_template.policies = Object.assign({}, ...doc.topology_template.policies);
            write(doc);
            assert.deepEqual(readCnfVnfd(dir)!.aspects[0].deltas, [{ vduId: "VDU1", instances: 1 }]);
            doc.topology_template.policies.VDU1_scaling_aspect_deltas.targets = "VDU1";
            write(doc);
            assertProblem(problems(dir), `${DF}: topology_template.policies.VDU1_scaling_aspect_deltas.targets`, /must list the VDUs/);
        });
    });
});

/**
 * The rules the Kubernetes API server applies to the fields these manifests set (apimachinery validation):
 * object names, label keys and values, container and port names, ports, and a Deployment's selector.
 */
function kubernetesProblems(doc: any): string[] {
    const problems: string[] = [];
    const dns1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
    const dns1123Subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
    const dns1035Label = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
    const labelValue = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
    const check = (ok: boolean, what: string) => ok || problems.push(what);

    check(typeof doc.apiVersion === "string" && typeof doc.kind === "string", "apiVersion and kind");
    const name = doc.metadata?.name;
    if (doc.kind === "Service") check(typeof name === "string" && name.length <= 63 && dns1035Label.test(name), `Service name ${name}`);
    else check(typeof name === "string" && name.length <= 253 && dns1123Subdomain.test(name), `name ${name}`);
    const labels = (l: any, where: string) => {
        for (const [k, v] of Object.entries(l ?? {})) check(k.length <= 63 && labelValue.test(k) && typeof v === "string" && v.length <= 63 && labelValue.test(v), `${where} label ${k}=${v}`);
    };
    labels(doc.metadata?.labels, "metadata");

    const podSpec = (spec: any, where: string) => {
        check(Array.isArray(spec?.containers) && spec.containers.length > 0, `${where}.containers`);
        for (const c of spec?.containers ?? []) {
            check(typeof c.name === "string" && c.name.length <= 63 && dns1123Label.test(c.name), `${where} container name ${c.name}`);
            check(typeof c.image === "string" && c.image !== "", `${where} container ${c.name} image`);
            check(["Always", "IfNotPresent", "Never", undefined].includes(c.imagePullPolicy), `${where} imagePullPolicy`);
            for (const p of c.ports ?? []) check(Number.isInteger(p.containerPort) && p.containerPort > 0 && p.containerPort < 65536 && ["TCP", "UDP", "SCTP", undefined].includes(p.protocol), `${where} port`);
        }
    };
    if (doc.kind === "Pod") podSpec(doc.spec, "spec");
    if (doc.kind === "Deployment") {
        check(doc.apiVersion === "apps/v1", "Deployment apiVersion");
        check(Number.isInteger(doc.spec?.replicas) && doc.spec.replicas >= 0, "replicas");
        const selector = doc.spec?.selector?.matchLabels;
        const template = doc.spec?.template?.metadata?.labels ?? {};
        check(selector && Object.keys(selector).length > 0, "selector.matchLabels");
        for (const [k, v] of Object.entries(selector ?? {})) check(template[k] === v, `selector ${k}=${v} matches the template's labels`);
        labels(template, "template");
        podSpec(doc.spec?.template?.spec, "spec.template.spec");
    }
    if (doc.kind === "Service") {
        for (const p of doc.spec?.ports ?? []) {
            check(Number.isInteger(p.port) && p.port > 0 && p.port < 65536, "service port");
            check(p.name === undefined || (p.name.length <= 63 && dns1123Label.test(p.name)), "service port name");
        }
    }
    return problems;
}
