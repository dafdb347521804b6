/** An etcd member taken out of a kubeadm cluster's etcd, through the etcd Pod of another control-plane node. */
import { RemoteCommandError, SshSession } from "../transport/ssh";
import { kubectl } from "./kubeadm";

const ETCDCTL_TLS = ["--endpoints=https://127.0.0.1:2379", "--cacert=/etc/kubernetes/pki/etcd/ca.crt", "--cert=/etc/kubernetes/pki/etcd/server.crt", "--key=/etc/kubernetes/pki/etcd/server.key"];

/**
 * Removes the etcd member named exactly `name` (etcdctl run in the etcd pod of the control-plane node
 * `via`). IDs are 64-bit: read as text, never as JavaScript numbers. A removal refused by etcd fails with
 * RemoteCommandError (the caller may try another peer).
 */
export async function removeEtcdMember(cp: SshSession, via: string, name: string): Promise<"removed" | "absent"> {
    const etcdctl = (args: string[], options: { allowFailure?: boolean } = {}) => kubectl(cp, ["-n", "kube-system", "exec", `etcd-${via}`, "--", "etcdctl", ...ETCDCTL_TLS, ...args], { quiet: true, ...options });
    const listed = async () => {
        const list = await etcdctl(["member", "list", "-w", "json"]);
        const members: { ID: string; name: string }[] = JSON.parse(list.stdout.replace(/"ID":\s*(\d+)/g, '"ID":"$1"')).members ?? [];
        return members.find((m) => m.name === name);
    };
    const member = await listed();
    if (!member) return "absent";
    const removal = await etcdctl(["member", "remove", BigInt(member.ID).toString(16)], { allowFailure: true });
    // A removal whose answer was lost (the exec's stream, the VIP moving) is tried again and finds no such member.
    if (removal.code !== 0 && (await listed())) {
        throw new RemoteCommandError(`etcd member ${name} could not be removed through etcd-${via}: ${removal.stderr.trim().split("\n").pop()}`, removal.code);
    }
    return "removed";
}
