// Package openstack maps terraform-provider-openstack v1.54.1 onto the Pulumi package "openstack" through
// pulumi-terraform-bridge, with the resource names @pulumi/openstack 3.15.2 uses (its resources.go at tag
// v3.15.2): the resources this project registers carry those names here; any other resource gets the
// bridge's standard name. Config defaults come from the same OS_* variables as in that release.
package openstack

import (
	"github.com/terraform-provider-openstack/terraform-provider-openstack/openstack"

	"github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfbridge"
	bridgetokens "github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfbridge/tokens"
	shimv2 "github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfshim/sdk-v2"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
)

// Version is the @pulumi/openstack release whose names and configuration this plugin serves.
const Version = "3.15.2"

func resource(module, name string) *tfbridge.ResourceInfo {
	lower := string(name[0]|0x20) + name[1:]
	return &tfbridge.ResourceInfo{Tok: tokens.Type("openstack:" + module + "/" + lower + ":" + name)}
}

func envDefault(names ...string) *tfbridge.SchemaInfo {
	return &tfbridge.SchemaInfo{Default: &tfbridge.DefaultInfo{EnvVars: names}}
}

// Provider is the bridged provider's description.
func Provider() tfbridge.ProviderInfo {
	multiple := false
	serverGroup := resource("compute", "ServerGroup")
	serverGroup.Fields = map[string]*tfbridge.SchemaInfo{"policies": {MaxItemsOne: &multiple}}

	info := tfbridge.ProviderInfo{
		P:           shimv2.NewProvider(openstack.Provider()),
		Name:        "openstack",
		Description: "OpenStack resources for k8s-vnf's tests, as @pulumi/openstack 3.15.2 names them.",
		GitHubOrg:   "terraform-provider-openstack",
		Version:     Version,
		Config: map[string]*tfbridge.SchemaInfo{
			"region":        envDefault("OS_REGION_NAME"),
			"insecure":      envDefault("OS_INSECURE"),
			"endpoint_type": envDefault("OS_ENDPOINT_TYPE"),
			"swauth":        envDefault("OS_SWAUTH"),
			"use_octavia":   envDefault("OS_USE_OCTAVIA"),
			"cloud":         envDefault("OS_CLOUD"),
			"delayed_auth":  envDefault("OS_DELAYED_AUTH"),
			"allow_reauth":  envDefault("OS_ALLOW_REAUTH"),
		},
		Resources: map[string]*tfbridge.ResourceInfo{
			"openstack_blockstorage_volume_v3":      resource("blockstorage", "Volume"),
			"openstack_compute_instance_v2":         resource("compute", "Instance"),
			"openstack_compute_keypair_v2":          resource("compute", "Keypair"),
			"openstack_compute_servergroup_v2":      serverGroup,
			"openstack_compute_volume_attach_v2":    resource("compute", "VolumeAttach"),
			"openstack_networking_floatingip_v2":    resource("networking", "FloatingIp"),
			"openstack_networking_port_v2":          resource("networking", "Port"),
			"openstack_networking_secgroup_v2":      resource("networking", "SecGroup"),
			"openstack_networking_secgroup_rule_v2": resource("networking", "SecGroupRule"),
		},
	}
	info.MustComputeTokens(bridgetokens.KnownModules("openstack_", "index", []string{
		"blockstorage_", "compute_", "containerinfra_", "db_", "dns_", "fw_", "identity_", "images_",
		"keymanager_", "lb_", "networking_", "objectstorage_", "orchestration_", "sharedfilesystem_", "vpnaas_",
	}, bridgetokens.MakeStandard("openstack")))
	info.SetAutonaming(255, "-")
	return info
}
