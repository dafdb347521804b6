import { strict as assert } from "node:assert";
import { apiAccessEndpoint, apiCertSans, kubeconfigAt } from "../components/kubeadmPlan";
import { exportFsid, exportLine, exportsFile, persistentVolumeFor, volumeSerial } from "../components/storagePlan";
import { ClusterSpec, NfsExportSpec } from "../config/spec";

const pv1: NfsExportSpec = { dir: "/volume/nfs/pv1", exportTo: "10.10.0.0/24", squash: "root", insecure: false };

describe("storage plan (pure functions)", () => {
    it("an export's fsid depends on its path only: the same on a new VM, another for another path, never 0", () => {
        assert.equal(exportFsid("/volume/nfs/pv1"), exportFsid("/volume/nfs/pv1"));
        assert.notEqual(exportFsid("/volume/nfs/pv1"), exportFsid("/volume/nfs/pv2"));
        for (let i = 0; i < 2000; i++) {
            const fsid = exportFsid(`/v/${i}`);
            assert.ok(Number.isInteger(fsid) && fsid > 0 && fsid < 2 ** 31, String(fsid));
        }
    });

    it("export lines: root_squash by default, Tacker's all_squash and insecure only when asked", () => {
        assert.equal(exportLine(pv1), `/volume/nfs/pv1 10.10.0.0/24(rw,sync,no_subtree_check,root_squash,sec=sys,fsid=${exportFsid(pv1.dir)})`);
        assert.match(exportLine({ ...pv1, squash: "all", insecure: true }), /\(rw,sync,no_subtree_check,all_squash,insecure,sec=sys,fsid=\d+\)$/);
        assert.match(exportLine({ ...pv1, squash: "none" }), /,no_root_squash,/);
        const file = exportsFile([pv1, { ...pv1, dir: "/volume/nfs/pv2" }]);
        assert.equal(file.split("\n").filter((l) => l.startsWith("/")).length, 2);
        assert.ok(file.endsWith("\n"));
    });

    it("the volume's device serial is its Cinder id cut to 20 characters", () => {
        assert.equal(volumeSerial("0b4c1cb7-92f3-4bd5-9a53-4e0a3bfa1c2d"), "0b4c1cb7-92f3-4bd5-9");
    });

    it("a PV manifest gets the storage server's address as its NFS server; everything else stays, status goes", () => {
        const manifest = {
            apiVersion: "v1",
            kind: "PersistentVolume",
            metadata: { name: "nfs-pv1", labels: { tier: "db" } },
            spec: { capacity: { storage: "1Gi" }, accessModes: ["ReadWriteOnce"], persistentVolumeReclaimPolicy: "Retain", storageClassName: "", mountOptions: ["nfsvers=4.1"], nfs: { server: "0.0.0.0", path: "/volume/nfs/pv1", readOnly: false } },
            status: { phase: "Bound" },
        };
        const pv = persistentVolumeFor(manifest, "10.10.0.77");
        assert.deepEqual(pv.spec.nfs, { server: "10.10.0.77", path: "/volume/nfs/pv1", readOnly: false });
        assert.deepEqual(pv.metadata, manifest.metadata);
        assert.deepEqual({ ...pv.spec, nfs: undefined }, { ...manifest.spec, nfs: undefined });
        assert.equal(manifest.spec.nfs.server, "0.0.0.0", "the manifest itself is left as it was");
        assert.equal("status" in pv, false);
    });

    it("the API is reached where the masters are (the first one's floating IP, else the control-plane endpoint), whose names the certificate carries", () => {
        const spec = { controlPlane: { apiServerPort: 6443, haproxyPort: 16443 } } as unknown as ClusterSpec;
        assert.equal(apiAccessEndpoint(spec, { address: "10.10.0.5", sshAddress: "172.24.4.10" }, "10.10.0.200:16443"), "172.24.4.10:6443", "floating IPs: the first master's, also in HA");
        assert.equal(apiAccessEndpoint(spec, { address: "10.10.0.5", sshAddress: "10.10.0.5" }, "10.10.0.200:16443"), "10.10.0.200:16443", "no floating IPs: the VIP (HA)");
        assert.equal(apiAccessEndpoint(spec, { address: "10.10.0.5", sshAddress: "10.10.0.5" }, "10.10.0.5:6443"), "10.10.0.5:6443", "no floating IPs: the master (simple)");
        assert.equal(apiAccessEndpoint(spec, { address: "fd00::5", sshAddress: "fd00:1::5" }, "x"), "[fd00:1::5]:6443");
        assert.deepEqual(apiCertSans([{ address: "10.10.0.5", sshAddress: "172.24.4.10" }, { address: "10.10.0.6", sshAddress: "10.10.0.6" }], "10.10.0.200"), ["10.10.0.200", "172.24.4.10"]);
        assert.deepEqual(apiCertSans([{ address: "10.10.0.5", sshAddress: "10.10.0.5" }]), []);
    });

    it("the kubeconfig Pulumi uses is the admin one with the server it reaches; credentials and CA are kept", () => {
        const admin = "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority-data: Q0E=\n    server: https://10.10.0.5:6443\n  name: kubernetes\nusers:\n- name: admin\n  user:\n    client-key-data: S0VZ\n";
        const out = kubeconfigAt(admin, "172.24.4.10:6443");
        assert.match(out, /server: https:\/\/172\.24\.4\.10:6443/);
        assert.match(out, /certificate-authority-data: Q0E=/);
        assert.match(out, /client-key-data: S0VZ/);
        assert.throws(() => kubeconfigAt("apiVersion: v1\n", "x:1"), /lists no cluster/);
    });
});
