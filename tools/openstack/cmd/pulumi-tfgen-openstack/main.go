// Writes the plugin's Pulumi schema (tfgen schema --out DIR), which pulumi-resource-openstack embeds.
package main

import (
	"github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfgen"

	openstack "k8s-vnf.local/tools/openstack"
)

func main() {
	tfgen.Main("openstack", openstack.Version, openstack.Provider())
}
