#!/usr/bin/env node
/**
 * Writes config/kubesprayFacts.json from a git clone of kubernetes-sigs/kubespray: for each release tag k8s-vnf
 * drives (v2.23.0 and later), what the stack's checks need to know of it. Nothing of the release is run.
 *
 *   node tools/kubesprayFacts.js KUBESPRAY_GIT_DIR > config/kubesprayFacts.json
 *
 * - kubeVersions: the Kubernetes versions the release can install, `{ "1.31": 9 }` for 1.31.0 to 1.31.9: the
 *   versions with an amd64 checksum of kubelet, kubeadm and kubectl alike in its checksums file
 *   (roles/download/defaults/main/checksums.yml in v2.23, roles/kubespray-defaults/defaults/main/checksums.yml
 *   in v2.24–v2.27, roles/kubespray_defaults/vars/main/checksums.yml from v2.28). Its download fails for any
 *   other (v2.31's roles/validate_inventory/tasks/main.yml asserts `kube_version in kubelet_checksums[image_arch]`).
 * - variables: the variable names the release documents: the top-level keys of every role's defaults
 *   (roles/<role>/defaults/), and of its sample inventory's group_vars (inventory/sample/group_vars/), commented-
 *   out ones (`# name: value`) included, names starting with `_` (its own) left out. Grouped by the releases
 *   that have them, each group's names as space-separated lines.
 */
"use strict";
const { execFileSync } = require("node:child_process");

const dir = process.argv[2];
if (!dir) {
    process.stderr.write("usage: node tools/kubesprayFacts.js KUBESPRAY_GIT_DIR\n");
    process.exit(2);
}
const YAML = require("yaml");
const git = (...args) => execFileSync("git", ["-C", dir, ...args], { encoding: "utf8", maxBuffer: 256 << 20 });

const parse = (tag) => tag.slice(1).split(".").map(Number);
const byVersion = (a, b) => {
    const [x, y] = [parse(a), parse(b)];
    return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
};
const tags = git("tag", "--list", "v2.*")
    .split("\n")
    .filter((t) => /^v2\.\d+\.\d+$/.test(t) && parse(t)[1] >= 23)
    .sort(byVersion);

const files = (tag) => git("ls-tree", "-r", "--name-only", tag).split("\n");
const show = (tag, file) => git("show", `${tag}:${file}`);

function kubeVersions(tag, list) {
    const file = list.find((f) => /^roles\/(download|kubespray[-_]defaults)\/(defaults|vars)\/main\/checksums\.yml$/.test(f));
    if (!file) throw new Error(`${tag}: no checksums file`);
    const sums = YAML.parse(show(tag, file));
    const versions = (name) => new Set(Object.entries(sums[name].amd64).filter(([, sum]) => sum && sum !== "0" && sum !== 0).map(([v]) => v.replace(/^v/, "")));
    const [kubelet, kubeadm, kubectl] = ["kubelet_checksums", "kubeadm_checksums", "kubectl_checksums"].map(versions);
    const max = {};
    for (const v of kubelet) {
        if (!kubeadm.has(v) || !kubectl.has(v)) continue;
        const [major, minor, patch] = v.split(".").map(Number);
        const key = `${major}.${minor}`;
        max[key] = Math.max(max[key] ?? -1, patch);
    }
    // Only whole ranges from .0 are written as one: check that each minor has every patch up to its newest.
    for (const [key, top] of Object.entries(max)) {
        for (let p = 0; p <= top; p++) if (!kubelet.has(`${key}.${p}`)) throw new Error(`${tag}: ${key}.${p} missing below ${key}.${top}`);
    }
    return Object.fromEntries(Object.entries(max).sort(([a], [b]) => byVersion(`v${b}.0`, `v${a}.0`)));
}

function variables(tag, list) {
    const names = new Set();
    const add = (text, commented) => {
        for (const m of text.matchAll(commented ? /^(?:# ?)?([a-z][a-z0-9_]*):(?: |$)/gm : /^([a-z][a-z0-9_]*):(?: |$)/gm)) names.add(m[1]);
    };
    for (const f of list) {
        if (/^roles\/.+\/defaults\/.+\.ya?ml$/.test(f)) add(show(tag, f), false);
        else if (/^inventory\/sample\/group_vars\/.+\.ya?ml$/.test(f)) add(show(tag, f), true);
    }
    return names;
}

const releases = {};
const namesByTag = [];
for (const tag of tags) {
    const list = files(tag);
    releases[tag] = { kubeVersions: kubeVersions(tag, list) };
    namesByTag.push(variables(tag, list));
}

// Names grouped by the tags that have them; a group's tags as ranges of the tag list (`v2.23.0-v2.27.1`).
const groups = new Map();
for (const name of [...new Set(namesByTag.flatMap((s) => [...s]))].sort()) {
    const mask = namesByTag.map((s) => (s.has(name) ? "1" : "0")).join("");
    if (!groups.has(mask)) groups.set(mask, []);
    groups.get(mask).push(name);
}
function ranges(mask) {
    const out = [];
    for (let i = 0; i < mask.length; i++) {
        if (mask[i] !== "1") continue;
        let j = i;
        while (mask[j + 1] === "1") j++;
        out.push(i === j ? tags[i] : `${tags[i]}-${tags[j]}`);
        i = j;
    }
    return out.join(",");
}
function lines(names, width = 250) {
    const out = [""];
    for (const n of names) {
        if (out[out.length - 1].length + n.length + 1 > width) out.push("");
        out[out.length - 1] += (out[out.length - 1] ? " " : "") + n;
    }
    return out;
}
const variableGroups = [...groups].sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0])).map(([mask, names]) => ({ releases: ranges(mask), names: lines(names) }));

const source = git("log", "-1", "--format=%H", tags[tags.length - 1]).trim();
const out = {
    comment: "Generated by tools/kubesprayFacts.js from kubernetes-sigs/kubespray's release tags; what each field holds is said there.",
    newestTag: `${tags[tags.length - 1]} (${source})`,
    releases,
    variables: variableGroups,
};
// One release per line, each group's names wrapped: readable, and a new release's diff shows what it changed.
const json = (v) => JSON.stringify(v);
const text = [
    "{",
    `  "comment": ${json(out.comment)},`,
    `  "newestTag": ${json(out.newestTag)},`,
    '  "releases": {',
    Object.entries(releases)
        .map(([tag, r]) => `    ${json(tag)}: { "kubeVersions": { ${Object.entries(r.kubeVersions).map(([k, v]) => `${json(k)}: ${v}`).join(", ")} } }`)
        .join(",\n"),
    "  },",
    '  "variables": [',
    variableGroups.map((g) => `    { "releases": ${json(g.releases)}, "names": [\n${g.names.map((l) => `      ${json(l)}`).join(",\n")}\n    ] }`).join(",\n"),
    "  ]",
    "}",
].join("\n");
process.stdout.write(`${text}\n`);
