/**
 * What the kubespray steps do on the Ansible server through inventory.sh: claim and write a cluster's
 * inventory, and run one of the release's playbooks over it. Imported by the steps' provider code.
 */
import type * as pulumi from "@pulumi/pulumi";
import { SshSession, SshTarget } from "../transport/ssh";
import { loadNodeScript } from "../kubernetes/scripts";

const SCRIPT = loadNodeScript("inventory.sh", __dirname);

/** Where a cluster's playbooks run: the release, the ansible-playbook, and the cluster's inventory. */
export interface PlaybookPlace {
    kubesprayRoot: string;
    ansiblePlaybook: string;
    inventoryPath: string;
    /** Whose inventory it is (its marker file). */
    cluster: string;
    /** Minutes one run may take. */
    timeoutMinutes: number;
}

/** A playbook step's {@link PlaybookPlace} as resource arguments. */
export interface PlaybookPlaceArgs {
    /** How to log into the Ansible server. */
    connection: pulumi.Input<SshTarget>;
    /** The release directory (from AnsibleServer). */
    kubesprayRoot: pulumi.Input<string>;
    /** The ansible-playbook to run (from AnsibleServer). */
    ansiblePlaybook: pulumi.Input<string>;
    /** The cluster's inventory directory. */
    inventoryPath: pulumi.Input<string>;
    /** Whose inventory it is (its marker file). */
    cluster: pulumi.Input<string>;
    /** Minutes one playbook run may take. */
    timeoutMinutes: pulumi.Input<number>;
}

/** A file of the inventory, relative to it. */
export interface InventoryFile {
    path: string;
    mode: "0600" | "0644";
    content: string;
}

/** How the Ansible server logs into the nodes and becomes root there (secret): the stack's key, passwords by node, or both. */
export interface AnsibleLogins {
    privateKey?: string;
    passwords?: Record<string, string>;
}

const KEY_FILE = ".ssh/k8s-vnf-id";

/** A JSON string is a YAML double-quoted scalar: any password goes into YAML as itself. */
const yamlString = (value: string) => JSON.stringify(value);

/**
 * The login files: with the stack's key, the key (0600) and the variable naming it; per node with a password, a
 * 0600 host_vars file with it: the SSH login without a key, and always what `become` gives sudo (a cloud image
 * with password logins asks sudo for it). hosts.yaml never holds a credential.
 */
export function loginFiles(place: PlaybookPlace, logins: AnsibleLogins, nodes: string[]): InventoryFile[] {
    const files: InventoryFile[] = [];
    if (logins.privateKey) {
        const key = logins.privateKey.endsWith("\n") ? logins.privateKey : `${logins.privateKey}\n`;
        files.push(
            { path: KEY_FILE, mode: "0600", content: key },
            { path: "group_vars/all/k8s-vnf-login.yml", mode: "0644", content: `ansible_ssh_private_key_file: ${yamlString(`${place.inventoryPath}/${KEY_FILE}`)}\n` },
        );
    }
    for (const node of nodes) {
        const password = logins.passwords?.[node];
        if (password === undefined) {
            if (!logins.privateKey) throw new Error(`no login for ${node}: neither the stack's SSH key nor a password`);
            continue;
        }
        const login = logins.privateKey ? "" : `ansible_password: ${yamlString(password)}\n`;
        files.push({ path: `host_vars/${node}/k8s-vnf-login.yml`, mode: "0600", content: `${login}ansible_become_password: ${yamlString(password)}\n` });
    }
    return files;
}

/** Makes the inventory directory the cluster's (refused when it holds another cluster's). */
export async function claimInventory(s: SshSession, place: PlaybookPlace): Promise<void> {
    await s.runScript(SCRIPT, ["claim", place.inventoryPath, place.cluster, s.target.username], { sudo: true, quiet: true });
}

/**
 * Writes the files, each atomically; the secrets among them are redacted from the session's output. `whole`:
 * they are the whole inventory, and our login files of nodes they no longer list go; else they are added.
 */
export async function writeInventory(s: SshSession, place: PlaybookPlace, files: InventoryFile[], secrets: string[], whole = true): Promise<void> {
    const list = files.map((f) => `${f.path} ${f.mode} ${Buffer.from(f.content).toString("base64")}`).join("\n");
    await s.runScript(SCRIPT, [whole ? "write" : "add", place.inventoryPath, place.cluster], { env: { K8S_VNF_FILES: list }, redact: secrets, quiet: true });
}

/**
 * Runs `playbook` (a path in the release) over the inventory, its output streamed; a failed play fails with
 * what failed where and its PLAY RECAP. `secrets` (the inventory's) are redacted from whatever it prints.
 */
export async function runPlaybook(s: SshSession, place: PlaybookPlace, playbook: string, args: string[] = [], secrets: string[] = []): Promise<void> {
    await s.runScript(SCRIPT, ["run", place.inventoryPath, place.kubesprayRoot, place.ansiblePlaybook, playbook, ...args], { timeoutMs: place.timeoutMinutes * 60_000, redact: secrets });
}

/** Removes a removed node's leaving inventory and login. */
export async function forgetNode(s: SshSession, place: PlaybookPlace, node: string): Promise<void> {
    await s.runScript(SCRIPT, ["forget", place.inventoryPath, place.cluster, node], { quiet: true });
}

/** Forgets the host keys the inventory's known_hosts holds for `addresses` (new VMs at those addresses). */
export async function forgetHostKeys(s: SshSession, place: PlaybookPlace, addresses: string[]): Promise<void> {
    await s.runScript(SCRIPT, ["forget-keys", place.inventoryPath, place.cluster, ...addresses], { quiet: true });
}

/** Deletes the inventory directory when it is the cluster's. */
export async function releaseInventory(s: SshSession, place: PlaybookPlace): Promise<void> {
    await s.runScript(SCRIPT, ["release", place.inventoryPath, place.cluster], { sudo: true, quiet: true });
}

/** The MTU of the node network, as the interface holding `address` on a node has it (from Neutron's DHCP). */
export async function nodeNetworkMtu(node: SshSession, address: string): Promise<number> {
    const mtu = Number((await node.runScript(SCRIPT, ["mtu", address], { quiet: true })).stdout.trim());
    if (!Number.isInteger(mtu) || mtu < 576) throw new Error(`could not read the MTU of ${address}'s interface`);
    return mtu;
}
