#!/usr/bin/env bash
# Builds the real tools the tests drive, from their Go modules, into a cache outside the work tree:
#   ${K8S_VNF_TOOLS:-~/.cache/k8s-vnf/tools}/<tool>-<version>-<recipe digest>/bin
# Each tool is built from a wrapper module in tools/<tool>/ (its go.mod and go.sum pin every module, so a
# build never asks the checksum database), and the wrapper must build what package.json pins (the tables
# below say which module versions each pin is). A folder that exists is complete (built aside, then renamed
# under a lock), so a second run builds nothing; a build that fails leaves nothing. A new recipe (this
# script, the wrapper, the Go toolchain) builds anew; builds no checkout has used for a week are removed.
# The folders of this checkout's tools go to node_modules/.cache/k8s-vnf/tools.json for the tests
# (test/support/tools.ts). Nothing here downloads but Go modules through the Go module proxy, the Go toolchain
# of the Kubernetes release among them (golang.org/toolchain).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
cache=${K8S_VNF_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/k8s-vnf/tools}
mkdir -p "$cache" "$root/node_modules/.cache/k8s-vnf"
export CGO_ENABLED=0 GOFLAGS=-mod=readonly GOTOOLCHAIN=local

# What each pin of package.json is built from: the provider module's version (tag v4.25.0 of
# pulumi-kubernetes is commit f47bc2d6f199), and the modules pulumi-openstack v3.15.2's provider/go.mod requires.
declare -A KUBERNETES_PROVIDER=([4.25.0]=v4.0.0-20260115033456-f47bc2d6f199)
declare -A OPENSTACK_TERRAFORM=([3.15.2]=v1.54.1)
declare -A OPENSTACK_BRIDGE=([3.15.2]=v3.79.0)

pin() { node -p 'require(process.argv[1]).dependencies[process.argv[2]]' "$root/package.json" "$1"; }

# The version a wrapper's go.mod requires of a module (require lines only).
required() {
    awk -v m="$2" '
        $1 == "require" && $2 == "(" { inside = 1; next }
        inside && $1 == ")" { inside = 0; next }
        inside && $1 == m { print $2; exit }
        $1 == "require" && $2 == m { print $3; exit }' "$here/$1/go.mod"
}

agree() { # WANTED GOT WHAT: the wrapper builds what package.json pins
    if [ -z "$2" ] || [ "$1" != "$2" ]; then
        echo "tools/build.sh: $3: package.json's pin needs ${1:-an entry in the tables of tools/build.sh}, but the wrapper builds ${2:-nothing}: update tools/ with it" >&2
        exit 1
    fi
}

digest() { # the recipe of a tool: its wrapper's files, this script and the Go toolchain
    (
        cd "$here/$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum
        sha256sum <"$here/build.sh"
        go version
        go env GOOS GOARCH GOAMD64 GOEXPERIMENT
    ) | sha256sum | cut -c1-12
}

# A plugin's schema with the release's version in it, as the release's generate step embeds it.
versioned_schema() { # FROM TO VERSION
    node -e 'const fs = require("fs"); const s = JSON.parse(fs.readFileSync(process.argv[1], "utf8")); s.version = process.argv[3]; fs.writeFileSync(process.argv[2], JSON.stringify(s));' "$1" "$2" "$3"
}

# A module's folder in the module cache, downloaded first when the cache is new.
module_dir() {
    go mod download "$1"
    local dir
    dir=$(go list -m -f '{{.Dir}}' "$1")
    [ -n "$dir" ] || { echo "tools/build.sh: $1 is not in the module cache" >&2; exit 1; }
    echo "$dir"
}

# build NAME VERSION: builds tools/NAME with its recipe (a function build_NAME OUT VERSION) unless built.
declare -A built
build() {
    local name=$1 version=$2 recipe dest
    recipe=$(digest "$name")
    dest="$cache/$name-$version-$recipe"
    exec 9>"$cache/.$name.lock"
    flock 9
    if [ ! -d "$dest" ]; then
        local started=$SECONDS work
        work=$(mktemp -d "$cache/.$name.XXXXXX")
        trap 'rm -rf "$work"' EXIT
        echo "tools: building $name $version (the first build on a machine takes minutes)"
        cp -r "$here/$name" "$work/src"
        (cd "$work/src" && "build_${name//-/_}" "$work" "$version")
        rm -rf "$work/src"
        mv -T "$work" "$dest"
        trap - EXIT
        echo "tools: built $name $version in $((SECONDS - started)) s"
    else
        echo "tools: $name $version is built ($dest)"
    fi
    touch "$dest"
    find "$cache" -mindepth 1 -maxdepth 1 \( -name "$name-[0-9]*" -o -name ".$name.??????" \) ! -path "$dest" -mtime +7 -exec rm -rf {} +
    exec 9>&-
    built[$name]="$dest/bin"
}

# The CLI, as the release builds it (.goreleaser.yml: CGO off, -trimpath, the version ldflag, osusergo and
# grpcnotrace tags); the dynamic-provider plugin is the release's script, taken from the SDK module.
build_pulumi() {
    local ldflags="-w -s -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$2"
    go build -trimpath -tags osusergo,grpcnotrace -ldflags "$ldflags" -o "$1/bin/pulumi" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
    install -m 0755 "$(module_dir github.com/pulumi/pulumi/sdk/v3)/nodejs/dist/pulumi-resource-pulumi-nodejs" "$1/bin/pulumi-resource-pulumi-nodejs"
}

build_pulumi_language_nodejs() {
    go build -trimpath -tags osusergo,grpcnotrace -ldflags "-w -s -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$2" \
        -o "$1/bin/pulumi-language-nodejs" github.com/pulumi/pulumi/sdk/v3/nodejs/cmd/pulumi-language-nodejs
}

# The bridged provider: tfgen writes the schema, which the plugin then embeds.
build_openstack() {
    go build -trimpath -o "$1/tfgen/pulumi-tfgen-openstack" ./cmd/pulumi-tfgen-openstack
    "$1/tfgen/pulumi-tfgen-openstack" schema --out "$1/tfgen" >"$1/tfgen/tfgen.log" 2>&1 || { tail -20 "$1/tfgen/tfgen.log" >&2; exit 1; }
    versioned_schema "$1/tfgen/schema.json" cmd/pulumi-resource-openstack/schema.json "$2"
    go build -trimpath -o "$1/bin/pulumi-resource-openstack" ./cmd/pulumi-resource-openstack
}

# The provider's own Serve, with the schema and Terraform mapping committed in its module.
build_kubernetes() {
    local module=github.com/pulumi/pulumi-kubernetes/provider/v4 dir
    dir=$(module_dir "$module")
    versioned_schema "$dir/cmd/pulumi-resource-kubernetes/schema.json" cmd/pulumi-resource-kubernetes/schema.json "$2"
    cp "$dir/cmd/pulumi-resource-kubernetes/terraform-mapping.json" cmd/pulumi-resource-kubernetes/
    go build -trimpath -ldflags "-w -s -X $module/pkg/version.Version=$2" -o "$1/bin/pulumi-resource-kubernetes" ./cmd/pulumi-resource-kubernetes
}

# Kubernetes at k8s-vnf's default version, with the version ldflags its release sets (hack/lib/version.sh
# kube::version::ldflags; without them kubeadm asks dl.k8s.io which version it is); the date is the module's.
# Built with the Go its release was built with (KUBE_GO), as are etcd and CoreDNS for its images: a newer
# Go's net/url refuses what v1.31's kubeadm writes (Go 1.26 rejects "[10.96.0.1]:1234", kubeadm's
# HTTPProxyCIDR preflight URL for an IPv4 service CIDR, which the Go 1.22 of its release accepts).
build_kube() {
    local major minor date pkg flags="-w -s"
    IFS=. read -r major minor _ <<<"$2"
    date=$(go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        flags+=" -X $pkg.gitVersion=v$2 -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
    done
    mkdir -p "$1/bin"
    GOTOOLCHAIN=$KUBE_GO go build -trimpath -ldflags "$flags" -o "$1/bin/" k8s.io/kubernetes/cmd/{kube-apiserver,kube-controller-manager,kube-scheduler,kubeadm,kubectl,kubelet,kube-proxy}
    # The sandbox's pause program, as build/pause/Makefile builds it (static C; the image tag is kubeadm's
    # constants.PauseVersion, its revision the release's).
    local pause_version
    pause_version=$(sed -n 's/^\s*PauseVersion = "\([0-9.]*\)"$/\1/p' "$(module_dir k8s.io/kubernetes)/cmd/kubeadm/app/constants/constants.go")
    gcc -Os -Wall -Werror -static "-DVERSION=v$pause_version-v$2" -o "$1/bin/pause" "$(module_dir k8s.io/kubernetes)/build/pause/linux/pause.c"
}

# etcd and etcdctl, as etcd's image has them (the program takes a leaving master's member out with etcdctl in
# the etcd Pod).
build_etcd() {
    GOTOOLCHAIN=$KUBE_GO go build -trimpath -ldflags "-w -s" -o "$1/bin/etcd" ./cmd/etcd
    GOTOOLCHAIN=$KUBE_GO go build -trimpath -ldflags "-w -s" -o "$1/bin/etcdctl" go.etcd.io/etcd/etcdctl/v3
}

build_coredns() {
    GOTOOLCHAIN=$KUBE_GO go build -trimpath -ldflags "-w -s -X github.com/coredns/coredns/coremain.GitCommit=v$2" -o "$1/bin/coredns" github.com/coredns/coredns
}

# The lab's pod network (tools/cni): flanneld as flannel's Makefile builds it on amd64 (cgo for the udp
# backend, linked statically; here with the netgo and osusergo tags, so it needs no glibc at run time), from
# flannel's main.go without the tencentvpc backend (tools/cni/tools.go says why); install-conf as its
# images/Dockerfile builds it; the CNI plugins flannel's CNI plugin delegates to; and flannel's own manifest of
# the release, which the lab serves as the cluster's CNI manifest.
build_cni() {
    local flannel
    flannel=$(module_dir github.com/flannel-io/flannel)
    mkdir -p flanneld "$1/bin" "$1/manifests"
    sed '/pkg\/backend\/tencentvpc"$/d' "$flannel/main.go" >flanneld/main.go
    ! cmp -s "$flannel/main.go" flanneld/main.go || { echo "tools/build.sh: flannel's main.go no longer imports the tencentvpc backend: update build_cni" >&2; exit 1; }
    CGO_ENABLED=1 go build -trimpath -tags netgo,osusergo \
        -ldflags "-w -s -X github.com/flannel-io/flannel/pkg/version.Version=v$2 -extldflags -static" -o "$1/bin/flanneld" ./flanneld
    go build -trimpath -ldflags "-w -s" -o "$1/bin/install-conf" github.com/flannel-io/flannel/cmd/install_conf
    go build -trimpath -ldflags "-w -s" -o "$1/bin/" github.com/containernetworking/plugins/plugins/{ipam/host-local,main/bridge,main/loopback,meta/portmap}
    cp "$flannel/Documentation/kube-flannel.yml" "$1/manifests/"
}

build_flannel_cni_plugin() {
    go build -trimpath -ldflags "-w -s" -o "$1/bin/flannel" github.com/containernetworking/plugins/plugins/meta/flannel
}

pulumi_version=$(pin @pulumi/pulumi)
agree "v$pulumi_version" "$(required pulumi github.com/pulumi/pulumi/pkg/v3)" "@pulumi/pulumi (tools/pulumi pkg/v3)"
agree "v$pulumi_version" "$(required pulumi github.com/pulumi/pulumi/sdk/v3)" "@pulumi/pulumi (tools/pulumi sdk/v3)"
build pulumi "$pulumi_version"

language_host=$(required pulumi-language-nodejs github.com/pulumi/pulumi/sdk/v3)
agree "v3.68.0" "$language_host" "the language host (tools/pulumi-language-nodejs: the newest release served with it inside sdk/v3)"
build pulumi-language-nodejs "${language_host#v}"

openstack_version=$(pin @pulumi/openstack)
agree "${OPENSTACK_TERRAFORM[$openstack_version]:-}" "$(required openstack github.com/terraform-provider-openstack/terraform-provider-openstack)" "@pulumi/openstack (tools/openstack terraform-provider-openstack)"
agree "${OPENSTACK_BRIDGE[$openstack_version]:-}" "$(required openstack github.com/pulumi/pulumi-terraform-bridge/v3)" "@pulumi/openstack (tools/openstack pulumi-terraform-bridge)"
agree "$openstack_version" "$(sed -n 's/^const Version = "\(.*\)"$/\1/p' "$here/openstack/provider.go")" "@pulumi/openstack (tools/openstack/provider.go Version)"
build openstack "$openstack_version"

kubernetes_version=$(pin @pulumi/kubernetes)
agree "${KUBERNETES_PROVIDER[$kubernetes_version]:-}" "$(required kubernetes github.com/pulumi/pulumi-kubernetes/provider/v4)" "@pulumi/kubernetes (tools/kubernetes provider/v4)"
agree "v$kubernetes_version" "$(required kubernetes github.com/pulumi/pulumi-kubernetes/sdk/v4)" "@pulumi/kubernetes (tools/kubernetes sdk/v4)"
build kubernetes "$kubernetes_version"

# The lab's control plane: Kubernetes at kubernetes.version's default, its staging modules at their published
# v0.<minor>.<patch>, and the etcd that release's kubeadm runs.
kube_version=$(sed -n 's/.*version: kubernetesVersion\.default("\([0-9.]*\)").*/\1/p' "$root/config/schema.ts")
agree "v$kube_version" "$(required kube k8s.io/kubernetes)" "kubernetes.version's default in config/schema.ts (tools/kube k8s.io/kubernetes)"
agree "k8s.io/client-go v0.${kube_version#*.}" "$(awk '$1 == "k8s.io/client-go" && $2 == "=>" { print $3, $4 }' "$here/kube/go.mod")" "kubernetes.version's default (tools/kube's replace of the staging modules)"
KUBE_GO=go$(cd "$here/kube" && cat "$(module_dir k8s.io/kubernetes)/.go-version")
build kube "$kube_version"
etcd_version=$(cd "$here/kube" && sed -n 's/^\s*DefaultEtcdVersion = "\([0-9.]*\)-0"$/\1/p' "$(module_dir "k8s.io/kubernetes")/cmd/kubeadm/app/constants/constants.go")
agree "v$etcd_version" "$(required etcd go.etcd.io/etcd/server/v3)" "the etcd of kubeadm v$kube_version (tools/etcd go.etcd.io/etcd/server/v3)"
build etcd "$etcd_version"
coredns_version=$(cd "$here/kube" && sed -n 's/^\s*CoreDNSVersion = "v\([0-9.]*\)"$/\1/p' "$(module_dir "k8s.io/kubernetes")/cmd/kubeadm/app/constants/constants.go")
agree "v$coredns_version" "$(required coredns github.com/coredns/coredns)" "the CoreDNS of kubeadm v$kube_version (tools/coredns github.com/coredns/coredns)"
build coredns "$coredns_version"
# The lab's pod network, which no pin of package.json names: flannel as tools/cni requires it.
build cni "$(required cni github.com/flannel-io/flannel | cut -c2-)"
build flannel-cni-plugin "$(required flannel-cni-plugin github.com/containernetworking/plugins | cut -c2-)"

manifest=$(mktemp "$root/node_modules/.cache/k8s-vnf/.tools.XXXXXX")
for name in "${!built[@]}"; do printf '%s\0%s\0' "$name" "${built[$name]}"; done |
    node -e 'const p = require("fs").readFileSync(0, "utf8").split("\0").slice(0, -1); const m = {}; for (let i = 0; i < p.length; i += 2) m[p[i]] = p[i + 1]; process.stdout.write(JSON.stringify(m, null, 2) + "\n");' >"$manifest"
mv -f "$manifest" "$root/node_modules/.cache/k8s-vnf/tools.json"
