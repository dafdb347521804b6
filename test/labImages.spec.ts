/** The lab's image helpers: references resolved as the CRI plugin resolves them; empty folders in an image's layer. */
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { inRegistry, manifestImages, normalizedReference } from "./support/kubeImages";
import { dockerArchive } from "./support/ociImage";

describe("lab images", () => {
    it("a reference in full: Docker Hub's library for a one-part name, :latest without a tag; a registry (a dot, a port, localhost, capitals) kept", () => {
        assert.equal(normalizedReference("nginx"), "docker.io/library/nginx:latest");
        assert.equal(normalizedReference("nginx:1.25"), "docker.io/library/nginx:1.25");
        assert.equal(normalizedReference("team/app"), "docker.io/team/app:latest");
        assert.equal(normalizedReference("library/nginx"), "docker.io/library/nginx:latest");
        assert.equal(normalizedReference("docker.io/nginx"), "docker.io/library/nginx:latest");
        assert.equal(normalizedReference("index.docker.io/nginx:1.25"), "docker.io/library/nginx:1.25");
        assert.equal(normalizedReference("Registry/app"), "Registry/app:latest", "capitals: a registry, as distribution reads it");
        assert.equal(normalizedReference("localhost:5000/x"), "localhost:5000/x:latest");
        assert.equal(normalizedReference("registry.k8s.io/pause:3.10"), "registry.k8s.io/pause:3.10");
        assert.equal(normalizedReference("localhost/app"), "localhost/app:latest");
        assert.equal(normalizedReference("10.0.0.5:5000/k8s/etcd:3.5.15-0"), "10.0.0.5:5000/k8s/etcd:3.5.15-0");
        assert.equal(normalizedReference("ghcr.io/flannel-io/flannel@sha256:" + "a".repeat(64)), "ghcr.io/flannel-io/flannel@sha256:" + "a".repeat(64));
        assert.deepEqual(manifestImages("spec:\n  containers:\n  - name: web\n    image: nginx\n  - image: \"registry.k8s.io/pause:3.10\"\n"), ["docker.io/library/nginx:latest", "registry.k8s.io/pause:3.10"]);
    });

    it("a manifest moved to a registry: each image under the registry, its path and tag kept, the rest of the manifest as it was", () => {
        const manifest = 'containers:\n- name: a\n  image: ghcr.io/flannel-io/flannel:v0.28.10\n  - image: "nginx"\n  args: ["--image: x"]\n';
        assert.equal(inRegistry(manifest, "10.0.0.5:5000"), 'containers:\n- name: a\n  image: 10.0.0.5:5000/flannel-io/flannel:v0.28.10\n  - image: 10.0.0.5:5000/library/nginx:latest\n  args: ["--image: x"]\n');
    });

    it("an image's empty folders are in its layer, beside a file's folders", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-image-"));
        try {
            dockerArchive(path.join(dir, "image.tar"), { repoTag: "demo:1", files: { "usr/sbin/demo": "x" }, directories: ["/var/log/demo", "/run"] });
            const layer = JSON.parse(spawnSync("tar", ["-xOf", path.join(dir, "image.tar"), "manifest.json"], { encoding: "utf8" }).stdout)[0].Layers[0];
            const listed = spawnSync("sh", ["-c", `tar -xOf image.tar ${layer} | tar -tf -`], { cwd: dir, encoding: "utf8" }).stdout.split("\n").filter(Boolean);
            assert.deepEqual(listed.sort(), ["run/", "usr/", "usr/sbin/", "usr/sbin/demo", "var/", "var/log/", "var/log/demo/"]);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});
