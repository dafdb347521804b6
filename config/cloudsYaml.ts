/**
 * A cloud of clouds.yaml as the OpenStack provider reads it (terraform-provider-openstack v1.54.1 through
 * gophercloud/utils v0.0.0-20230324070755 openstack/clientconfig): clouds.yaml is the first of
 * OS_CLIENT_CONFIG_FILE, ./clouds.yaml, ~/.config/openstack/clouds.yaml and /etc/openstack/clouds.yaml
 * (utils.go FindAndReadCloudsYAML, .yml too), secure.yaml found the same way but for the variable; the
 * named cloud's entry, or the only one when none is named; secure.yaml's entry of that name merged over it
 * (requests.go GetCloudFromYAML, mergeClouds). Profiles (clouds-public.yaml) are not read.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as YAML from "yaml";

export type CloudEntry = Record<string, any>;

/** `name` in the current folder, ~/.config/openstack or /etc/openstack, the first found (utils.go FindAndReadYAML). */
function findYaml(name: string, cwd: string): string | undefined {
    return [cwd, path.join(os.homedir(), ".config/openstack"), "/etc/openstack"].map((dir) => path.join(dir, name)).find((file) => fs.existsSync(file));
}

function cloudsIn(file: string | undefined): Record<string, CloudEntry> | undefined {
    if (!file) return undefined;
    const doc = YAML.parse(fs.readFileSync(file, "utf8")) as { clouds?: Record<string, CloudEntry> } | null;
    return doc?.clouds ?? {};
}

/** `override` over `base`, objects merged key by key, an empty value overriding nothing (clientconfig mergeClouds, mergeInterfaces). */
function merged(base: CloudEntry, override: CloudEntry): CloudEntry {
    const out: CloudEntry = { ...base };
    for (const [k, v] of Object.entries(override)) {
        if (v === undefined || v === null || v === "") continue;
        out[k] = typeof v === "object" && !Array.isArray(v) && base[k] && typeof base[k] === "object" ? merged(base[k], v) : v;
    }
    return out;
}

/** The cloud `name` (or the only one), with where it came from; a problem when there is none. */
export function readCloud(name: string | undefined, env: NodeJS.ProcessEnv, cwd = process.cwd()): { cloud?: CloudEntry; file?: string; problem?: string } {
    const given = env.OS_CLIENT_CONFIG_FILE;
    // clouds.yaml in every place before clouds.yml (FindAndReadCloudsYAML), and secure.yaml likewise.
    const file = given && fs.existsSync(given) ? given : (findYaml("clouds.yaml", cwd) ?? findYaml("clouds.yml", cwd));
    const secureFile = findYaml("secure.yaml", cwd) ?? findYaml("secure.yml", cwd);
    let clouds: Record<string, CloudEntry> | undefined;
    let secure: Record<string, CloudEntry> | undefined;
    try {
        clouds = cloudsIn(file);
        secure = cloudsIn(secureFile);
    } catch (e) {
        return { problem: `cannot read ${file}${secureFile ? ` or ${secureFile}` : ""}: ${(e as Error).message.split("\n")[0]}` };
    }
    if (!clouds && !secure) return { problem: "no clouds.yaml found (OS_CLIENT_CONFIG_FILE, ./clouds.yaml, ~/.config/openstack/clouds.yaml, /etc/openstack/clouds.yaml)" };
    const entries = clouds ?? {};
    let cloud = name ? entries[name] : Object.keys(entries).length === 1 ? Object.values(entries)[0] : undefined;
    if (name && !cloud && !secure?.[name]) return { problem: `cloud ${name} is not in ${file ?? "clouds.yaml"}` };
    const secureEntry = name ? secure?.[name] : undefined;
    if (secureEntry) cloud = merged(cloud ?? {}, secureEntry);
    if (!cloud) return { problem: `${file} has ${Object.keys(entries).length} clouds: name one (openstack:cloud or OS_CLOUD)` };
    return { cloud, file };
}
