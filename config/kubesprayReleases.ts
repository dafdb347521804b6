/**
 * What k8s-vnf must know of each kubespray release it drives, read from the release at its tag in
 * kubernetes-sigs/kubespray:
 * - the ansible-core it accepts: playbooks/ansible_version.yml asserts minimal_ansible_version ≤ core <
 *   maximal_ansible_version (v2.23.x 2.14.0–2.15.0; v2.24.x 2.15.5–2.17.0; v2.25–v2.28 2.16.4–2.17.0;
 *   v2.29–v2.30 2.17.3–2.18.0; v2.31.x 2.18.0–2.19.0);
 * - the facts playbook: playbooks/facts.yml from v2.23 (v2.16 had it at the top);
 * - remove-node.yml's confirmation: `skip_confirmation=true` from v2.23 (playbooks/remove_node.yml,
 *   its pause prompt); v2.16 asked through vars_prompt `delete_nodes_confirmation`. Up to v2.27 the play
 *   takes every node when `node` is not given: the KubesprayWorker step refuses an empty node name.
 * - how `kube_version` spells a Kubernetes version: `v1.31.4` up to v2.27 (roles/kubespray-defaults/defaults/
 *   main/main.yml `kube_version: v1.31.4` at v2.27.0, its checksums keyed `v1.31.4`), `1.32.5` from v2.28
 *   (roles/kubespray_defaults/defaults/main/main.yml takes the first key of kubelet_checksums, keyed `1.32.5`,
 *   and roles/validate_inventory/tasks/main.yml asserts `not kube_version.startswith('v')`);
 * - for each tag k8s-vnf has read (config/kubesprayFacts.json, made by tools/kubesprayFacts.js): the
 *   Kubernetes versions it installs (its checksums) and the variable names it documents (its role defaults
 *   and sample group_vars).
 * Older releases are not driven (their ansible-core is out of support); newer ones are refused until checked.
 */
import facts from "./kubesprayFacts.json";

export interface KubesprayRelease {
    /** ansible-core versions the release accepts: min ≤ core < maxExclusive. */
    ansibleCore: { min: string; maxExclusive: string };
    /** Its facts playbook, to run before `scale.yml --limit`. */
    factsPlaybook: string;
    /** remove-node.yml's variables besides `node`. */
    removeNodeVars: string[];
    /** `kube_version` as the release spells Kubernetes `version` (`1.31.4`): with a leading `v` up to v2.27. */
    kubeVersion(version: string): string;
    /** What k8s-vnf has read of this very tag; undefined for a tag it has not (its settings go unchecked). */
    known?: KnownRelease;
}

export interface KnownRelease {
    /** The Kubernetes versions it installs: `{"1.31": 9}` for 1.31.0 to 1.31.9. */
    kubeVersions: Record<string, number>;
    /** The variable names it documents. */
    variables: ReadonlySet<string>;
}

const CORE_BY_MINOR: Record<number, [string, string]> = {
    23: ["2.14.0", "2.15.0"],
    24: ["2.15.5", "2.17.0"],
    25: ["2.16.4", "2.17.0"],
    26: ["2.16.4", "2.17.0"],
    27: ["2.16.4", "2.17.0"],
    28: ["2.16.4", "2.17.0"],
    29: ["2.17.3", "2.18.0"],
    30: ["2.17.3", "2.18.0"],
    31: ["2.18.0", "2.19.0"],
};

/** The first minor whose kube_version has no leading `v`. */
const UNPREFIXED_FROM_MINOR = 28;

/** The release's facts, or a reason it is not driven. */
export function kubesprayRelease(version: string): KubesprayRelease | { problem: string } {
    const [major, minor] = version.replace(/^v/, "").split(".").map(Number);
    const known = Object.keys(CORE_BY_MINOR).map(Number);
    const core = major === 2 ? CORE_BY_MINOR[minor] : undefined;
    if (!core) return { problem: `k8s-vnf drives kubespray v2.${Math.min(...known)} to v2.${Math.max(...known)}, not ${version}` };
    return {
        ansibleCore: { min: core[0], maxExclusive: core[1] },
        factsPlaybook: "playbooks/facts.yml",
        removeNodeVars: ["skip_confirmation=true"],
        kubeVersion: (v) => (minor < UNPREFIXED_FROM_MINOR ? `v${v}` : v),
        known: knownRelease(version.startsWith("v") ? version : `v${version}`),
    };
}

/** The Kubernetes versions a known release installs, as text: `1.33.0–1.33.11, 1.34.0–1.34.7`. */
export function kubeVersionRanges(known: KnownRelease): string {
    return Object.entries(known.kubeVersions)
        .sort(([a], [b]) => Number(a.split(".")[1]) - Number(b.split(".")[1]))
        .map(([minor, top]) => `${minor}.0–${minor}.${top}`)
        .join(", ");
}

/** Whether a known release installs Kubernetes `version` (`1.31.4`). */
export function installsKubernetes(known: KnownRelease, version: string): boolean {
    const [major, minor, patch] = version.split(".");
    const top = known.kubeVersions[`${major}.${minor}`];
    return top !== undefined && Number(patch) <= top;
}

const byTag = new Map<string, KnownRelease | undefined>();

function knownRelease(tag: string): KnownRelease | undefined {
    if (!byTag.has(tag)) {
        const release = (facts.releases as Record<string, { kubeVersions: Record<string, number> }>)[tag];
        byTag.set(tag, release && { kubeVersions: release.kubeVersions, variables: new Set(facts.variables.filter((g) => inTagRanges(tag, g.releases)).flatMap((g) => g.names.join(" ").split(" "))) });
    }
    return byTag.get(tag);
}

const order = (tag: string) => tag.slice(1).split(".").reduce((n, part) => n * 1000 + Number(part), 0);

/** Whether `tag` is in `ranges` (`v2.24.3,v2.25.1-v2.30.0`). */
function inTagRanges(tag: string, ranges: string): boolean {
    return ranges.split(",").some((range) => {
        const [from, to = from] = range.split("-");
        return order(from) <= order(tag) && order(tag) <= order(to);
    });
}
