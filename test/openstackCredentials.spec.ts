/**
 * The OpenStack credentials the program reads for its own compute-host lookup (config/openstackCredentials.ts,
 * config/cloudsYaml.ts), found where the OpenStack provider finds them: a named cloud of clouds.yaml with
 * secure.yaml merged over it, else `openstack:*` keys, else OS_* variables. (The same clouds.yaml driving the
 * real provider and the lookup against the lab's Keystone: realKubeletHa.lab.spec.ts.)
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as YAML from "yaml";
import { computeApiFrom } from "../config/openstackCredentials";

describe("OpenStack credentials for the compute-host lookup: clouds.yaml, openstack:* keys, OS_* variables", () => {
    let dir = "";
    const write = (name: string, doc: unknown) => {
        fs.writeFileSync(path.join(dir, name), YAML.stringify(doc));
        return path.join(dir, name);
    };
    beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-clouds-"))));
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));
    const lab = { auth: { auth_url: "https://keystone.lab:5000/v3", username: "admin", project_name: "admin", user_domain_name: "Default", project_domain_name: "Default" }, region_name: "RegionOne" };

    it("OS_CLOUD names a cloud of OS_CLIENT_CONFIG_FILE; its password from secure.yaml in the project folder; openstack:region overrides the cloud's", () => {
        const file = write("elsewhere.yaml", { clouds: { lab, other: { auth: { auth_url: "https://other:5000/v3" } } } });
        write("secure.yaml", { clouds: { lab: { auth: { password: "from-secure-yaml" } } } });
        const found = computeApiFrom({}, { OS_CLOUD: "lab", OS_CLIENT_CONFIG_FILE: file, OS_AUTH_URL: "https://ignored:5000/v3" }, dir);
        assert.deepEqual(found.problems, []);
        assert.deepEqual(found.api, { authUrl: "https://keystone.lab:5000/v3", username: "admin", password: "from-secure-yaml", projectName: "admin", projectId: undefined, userDomainName: "Default", projectDomainName: "Default", userDomainId: undefined, projectDomainId: undefined, applicationCredentialId: undefined, applicationCredentialSecret: undefined, region: "RegionOne" });
        assert.equal(computeApiFrom({ "openstack:region": "RegionTwo" }, { OS_CLOUD: "lab", OS_CLIENT_CONFIG_FILE: file }, dir).api?.region, "RegionTwo");
    });

    it("a field the cloud leaves empty comes from its OS_* variable, as clientconfig's v3auth fills it (a password exported beside clouds.yaml; domains by id); an empty secure.yaml value overrides nothing", () => {
        const file = write("clouds.yaml", { clouds: { lab: { ...lab, auth: { ...lab.auth, user_domain_name: undefined, project_domain_name: undefined, user_domain_id: "d-1", project_domain_id: "d-1" } } } });
        write("secure.yaml", { clouds: { lab: { auth: { username: "" } } } });
        const found = computeApiFrom({}, { OS_CLOUD: "lab", OS_CLIENT_CONFIG_FILE: file, OS_PASSWORD: "exported" }, dir);
        assert.deepEqual([found.problems, found.api?.password, found.api?.username, found.api?.userDomainId, found.api?.userDomainName], [[], "exported", "admin", "d-1", undefined]);
    });

    it("openstack:cloud with ./clouds.yaml: an application credential needs no user or project; its cacert is read; verify: false is refused", () => {
        const ca = path.join(dir, "ca.pem");
        fs.writeFileSync(ca, "-----BEGIN CERTIFICATE-----\nlab\n-----END CERTIFICATE-----\n");
        write("clouds.yaml", { clouds: { app: { auth_type: "v3applicationcredential", auth: { auth_url: "https://keystone.lab:5000/v3", application_credential_id: "ac-1", application_credential_secret: "ac-secret" }, cacert: ca }, loose: { ...lab, verify: false } } });
        const found = computeApiFrom({ "openstack:cloud": "app" }, {}, dir);
        assert.deepEqual([found.problems, found.api?.applicationCredentialId, found.api?.applicationCredentialSecret, found.api?.caCertificate], [[], "ac-1", "ac-secret", fs.readFileSync(ca, "utf8")]);
        const loose = computeApiFrom({ "openstack:cloud": "loose" }, {}, dir).problems.map((p) => p.message);
        assert.ok(loose.some((m) => /sets verify: false/.test(m)), loose.join("; "));
    });

    it("a cloud that is not there, or lacks what a lookup needs, is a problem of openstack:cloud naming it", () => {
        write("clouds.yaml", { clouds: { lab: { auth: { auth_url: "https://keystone.lab:5000/v3", username: "admin" } } } });
        assert.deepEqual(computeApiFrom({}, { OS_CLOUD: "nowhere" }, dir).problems, [{ path: "openstack:cloud", message: `cloud nowhere is not in ${path.join(dir, "clouds.yaml")}: needed to read each worker's compute host` }]);
        assert.deepEqual(computeApiFrom({}, { OS_CLOUD: "lab" }, dir).problems.map((p) => p.message.split(":")[0]), [`cloud lab (${path.join(dir, "clouds.yaml")}) has no password`, `cloud lab (${path.join(dir, "clouds.yaml")}) has no projectName`]);
    });

    it("without a cloud: openstack:* keys, else OS_* variables; what is missing named once by key and variable; OS_CACERT read", () => {
        const ca = path.join(dir, "ca.pem");
        fs.writeFileSync(ca, "PEM");
        const found = computeApiFrom({ "openstack:password": "from-config" }, { OS_AUTH_URL: "http://k:5000/v3", OS_USERNAME: "u", OS_PASSWORD: "from-env", OS_PROJECT_NAME: "p", OS_CACERT: ca }, dir);
        assert.deepEqual([found.api?.password, found.api?.projectName, found.api?.caCertificate, found.api?.userDomainName], ["from-config", "p", "PEM", "Default"]);
        const missing = computeApiFrom({}, { OS_AUTH_URL: "http://k:5000/v3" }, dir).problems;
        assert.deepEqual(missing.map((p) => p.path), ["openstack:userName", "openstack:password", "openstack:tenantName"]);
        assert.match(missing[0].message, /not set \(nor OS_USERNAME, nor openstack:cloud \/ OS_CLOUD\)/);
        assert.deepEqual(computeApiFrom({ "openstack:insecure": "true" }, { OS_AUTH_URL: "http://k", OS_USERNAME: "u", OS_PASSWORD: "p", OS_PROJECT_NAME: "p" }, dir).problems.map((p) => p.path), ["openstack:insecure"]);
    });
});
