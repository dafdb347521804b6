import * as fs from "node:fs";
import * as path from "node:path";
import { Lab } from "../lab/lab";

/** The stand-ins' shared cluster state of one stack (see test/lab/stand-ins/common.sh). */
export function clusterState(lab: Lab, stack: string) {
    const dir = path.join(lab.clusterState, stack);
    const list = (sub: string) => (fs.existsSync(path.join(dir, sub)) ? fs.readdirSync(path.join(dir, sub)).filter((f) => !f.includes(".")) : []).sort();
    const kv = (file: string): Record<string, string> =>
        Object.fromEntries(
            fs
                .readFileSync(file, "utf8")
                .trim()
                .split("\n")
                .filter(Boolean)
                .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
        );
    return {
        nodes: () => list("nodes"),
        node: (name: string) => kv(path.join(dir, "nodes", name)),
        setNode: (name: string, key: string, value: string) => {
            const file = path.join(dir, "nodes", name);
            const entries = { ...kv(file), [key]: value };
            fs.writeFileSync(file, Object.entries(entries).map(([k, v]) => `${k}=${v}\n`).join(""));
        },
        /** A registered Node of that name, as the API would hold one (role worker, an address unknown). */
        addNode: (name: string, status: "Ready" | "NotReady") => fs.writeFileSync(path.join(dir, "nodes", name), `role=worker\nstatus=${status}\nunschedulable=false\naddress=unknown\n`),
        removeNode: (name: string) => fs.rmSync(path.join(dir, "nodes", name), { force: true }),
        labels: (name: string) => kv(path.join(dir, "labels", name)),
        etcdMembers: () => list("etcd"),
        etcdId: (name: string) => fs.readFileSync(path.join(dir, "etcd", name), "utf8").trim(),
        calls: () => fs.readFileSync(path.join(dir, "calls"), "utf8").trim().split("\n"),
        applied: () => fs.readFileSync(path.join(dir, "applied"), "utf8").trim().split("\n"),
        blockDrain: (name: string, on: boolean) => (on ? fs.writeFileSync(path.join(dir, "drain-blocked", name), "") : fs.rmSync(path.join(dir, "drain-blocked", name), { force: true })),
    };
}

/** What on a host the kubeadm steps manage: compared before and after a run that should change none of it. */
const MANAGED_FILES = "/etc/hosts /etc/hostname /etc/containerd/config.toml /etc/sysctl.d/99-k8s-vnf.conf /etc/modules-load.d/k8s-vnf.conf /etc/haproxy/haproxy.cfg /etc/keepalived/keepalived.conf /etc/kubernetes/kubelet.conf";

/** The SHA-256 of each managed file `host` has. */
export function managedFilesFingerprint(lab: Lab, host: string): Promise<string> {
    return lab.inside(host, `for f in ${MANAGED_FILES}; do [ -f "$f" ] && sha256sum "$f"; done; true`);
}
