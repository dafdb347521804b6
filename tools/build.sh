#!/usr/bin/env bash
# Builds the real tools the tests drive, from their Go modules, into a cache outside the work tree:
#   ${K8S_VNF_TOOLS:-~/.cache/k8s-vnf/tools}/<tool>-<version>-<recipe digest>/bin
# Each tool is built from a wrapper module in tools/<tool>/ (its go.mod and go.sum pin every module, so a
# build never asks the checksum database), at the version package.json pins for its SDK. A folder that
# exists is complete (built aside, then renamed), so a second run builds nothing. The folders of this
# checkout's tools are written to node_modules/.cache/k8s-vnf/tools.json for the tests (test/support/tools.ts).
# Nothing here downloads at run time but Go modules, through the Go module proxy.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
cache=${K8S_VNF_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/k8s-vnf/tools}
mkdir -p "$cache" "$root/node_modules/.cache/k8s-vnf"
export CGO_ENABLED=0 GOFLAGS=-mod=readonly GOTOOLCHAIN=local

pin() { node -p "require('$root/package.json').dependencies['$1']"; }
# The version a wrapper's go.mod requires of a module.
required() { awk -v m="$2" '$1 == m { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$here/$1/go.mod"; }

agree() { # wrapper module package-json-pin: the wrapper builds what package.json pins
    local wanted=$1 got=$2 what=$3
    if [ "v$wanted" != "$got" ]; then
        echo "tools/build.sh: package.json pins $what $wanted, but the wrapper builds $got: update tools/ with it" >&2
        exit 1
    fi
}

digest() { # the recipe of a tool: its wrapper's files, its build function and the Go toolchain
    (cd "$here/$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum; declare -f "build_${1//-/_}"; go version) | sha256sum | cut -c1-12
}

# A plugin's schema with the release's version in it, as the release's generate step embeds it.
versioned_schema() { # FROM TO VERSION
    node -e 'const fs = require("fs"); const s = JSON.parse(fs.readFileSync(process.argv[1], "utf8")); s.version = process.argv[3]; fs.writeFileSync(process.argv[2], JSON.stringify(s));' "$1" "$2" "$3"
}

# build NAME VERSION: builds tools/NAME with tools/NAME's recipe (a function build_NAME OUT) unless done.
declare -A built
build() {
    local name=$1 version=$2
    local dest="$cache/$name-$version-$(digest "$name")"
    if [ ! -d "$dest" ]; then
        local started=$SECONDS work
        work=$(mktemp -d "$cache/.$name.XXXXXX")
        echo "tools: building $name $version (the first build on a machine takes minutes)"
        cp -r "$here/$name" "$work/src"
        ( cd "$work/src" && "build_${name//-/_}" "$work" "$version" )
        rm -rf "$work/src"
        mv "$work" "$dest"
        echo "tools: built $name $version in $((SECONDS - started)) s"
        # Builds of an older recipe of this tool are never used again.
        find "$cache" -mindepth 1 -maxdepth 1 -name "$name-[0-9]*" ! -path "$dest" -exec rm -rf {} +
    else
        echo "tools: $name $version is built ($dest)"
    fi
    built[$name]="$dest/bin"
}

# The CLI, as the release builds it (.goreleaser.yml: CGO off, -trimpath, the version ldflag, osusergo and
# grpcnotrace tags); the dynamic-provider plugin is the release's script, taken from the SDK module.
build_pulumi() {
    local version ldflags
    version=$(required pulumi github.com/pulumi/pulumi/pkg/v3)
    ldflags="-w -s -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$version"
    go build -trimpath -tags osusergo,grpcnotrace -ldflags "$ldflags" -o "$1/bin/pulumi" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
    local sdk
    sdk=$(go list -m -f '{{.Dir}}' github.com/pulumi/pulumi/sdk/v3)
    install -m 0755 "$sdk/nodejs/dist/pulumi-resource-pulumi-nodejs" "$1/bin/pulumi-resource-pulumi-nodejs"
}

build_pulumi_language_nodejs() {
    local version
    version=$(required pulumi-language-nodejs github.com/pulumi/pulumi/sdk/v3)
    go build -trimpath -tags osusergo,grpcnotrace -ldflags "-w -s -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$version" \
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
    dir=$(go list -m -f '{{.Dir}}' "$module")
    versioned_schema "$dir/cmd/pulumi-resource-kubernetes/schema.json" cmd/pulumi-resource-kubernetes/schema.json "$2"
    cp "$dir/cmd/pulumi-resource-kubernetes/terraform-mapping.json" cmd/pulumi-resource-kubernetes/
    go build -trimpath -ldflags "-w -s -X $module/pkg/version.Version=$2" -o "$1/bin/pulumi-resource-kubernetes" ./cmd/pulumi-resource-kubernetes
}

agree "$(pin @pulumi/pulumi)" "$(required pulumi github.com/pulumi/pulumi/pkg/v3)" "@pulumi/pulumi"
build pulumi "$(pin @pulumi/pulumi)"
build pulumi-language-nodejs "$(required pulumi-language-nodejs github.com/pulumi/pulumi/sdk/v3 | sed 's/^v//')"
openstack_version=$(sed -n 's/^const Version = "\(.*\)"$/\1/p' "$here/openstack/provider.go")
agree "$(pin @pulumi/openstack)" "v$openstack_version" "@pulumi/openstack"
build openstack "$openstack_version"
kubernetes_version=$(sed -n 's|^// The Kubernetes resource plugin of @pulumi/kubernetes \([0-9.]*\),.*|\1|p' "$here/kubernetes/go.mod")
agree "$(pin @pulumi/kubernetes)" "v$kubernetes_version" "@pulumi/kubernetes"
build kubernetes "$kubernetes_version"

manifest="$root/node_modules/.cache/k8s-vnf/tools.json"
{
    echo "{"
    sep=""
    for name in "${!built[@]}"; do printf '%s  "%s": "%s"' "$sep" "$name" "${built[$name]}"; sep=$',\n'; done
    printf '\n}\n'
} >"$manifest.tmp"
mv "$manifest.tmp" "$manifest"
