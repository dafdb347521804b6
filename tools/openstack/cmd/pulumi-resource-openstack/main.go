// The resource plugin: the bridged provider, serving the schema tfgen wrote beside this file at build time.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfbridge"

	openstack "k8s-vnf.local/tools/openstack"
)

//go:embed schema.json
var schema []byte

func main() {
	tfbridge.Main("openstack", openstack.Version, openstack.Provider(), schema)
}
