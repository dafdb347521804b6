/**
 * The real kubectl (tools/kube) on the test machine, as an operator runs it against a lab cluster: the
 * kubeconfig in a 0600 file of its own, removed afterwards.
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { builtTools } from "./tools";

/** A PersistentVolumeClaim in `default` for exactly the PersistentVolume `pv` (no storage class), as JSON. */
export function claimFor(pv: string): string {
    return JSON.stringify({
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        metadata: { name: `claim-${pv}`, namespace: "default" },
        spec: { accessModes: ["ReadWriteOnce"], storageClassName: "", volumeName: pv, resources: { requests: { storage: "1Gi" } } },
    });
}

/** kubectl ARGS with `kubeconfig` (and `input` on its standard input): what it printed, or an error with its stderr. */
export async function realKubectl(kubeconfig: string, args: string[], input?: string): Promise<string> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-kubeconfig-"));
    const file = path.join(dir, "kubeconfig");
    fs.writeFileSync(file, kubeconfig, { mode: 0o600 });
    try {
        const child = execFile(path.join(builtTools().bins.kube, "kubectl"), ["--kubeconfig", file, "--request-timeout", "20s", ...args], { maxBuffer: 16 << 20 });
        child.stdin?.end(input ?? "");
        return await new Promise<string>((resolve, reject) => {
            let out = "";
            let err = "";
            child.stdout?.on("data", (d) => (out += d));
            child.stderr?.on("data", (d) => (err += d));
            child.once("error", reject);
            child.once("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`kubectl ${args.join(" ")} exited ${code}: ${err.trim()}`))));
        });
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}
