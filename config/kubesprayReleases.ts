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
 * Older releases are not driven (their ansible-core is out of support); newer ones are refused until checked.
 */
export interface KubesprayRelease {
    /** ansible-core versions the release accepts: min ≤ core < maxExclusive. */
    ansibleCore: { min: string; maxExclusive: string };
    /** Its facts playbook, to run before `scale.yml --limit`. */
    factsPlaybook: string;
    /** remove-node.yml's variables besides `node`. */
    removeNodeVars: string[];
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

/** The release's facts, or a reason it is not driven. */
export function kubesprayRelease(version: string): KubesprayRelease | { problem: string } {
    const [major, minor] = version.replace(/^v/, "").split(".").map(Number);
    const known = Object.keys(CORE_BY_MINOR).map(Number);
    const core = major === 2 ? CORE_BY_MINOR[minor] : undefined;
    if (!core) return { problem: `k8s-vnf drives kubespray v2.${Math.min(...known)} to v2.${Math.max(...known)}, not ${version}` };
    return { ansibleCore: { min: core[0], maxExclusive: core[1] }, factsPlaybook: "playbooks/facts.yml", removeNodeVars: ["skip_confirmation=true"] };
}
