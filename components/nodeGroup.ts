import * as openstack from "@pulumi/openstack";
import * as pulumi from "@pulumi/pulumi";
import { NodeGroupSpec } from "../config/spec";
import { Server } from "./server";

export interface NodeGroupArgs {
    /** Prefix of the Nova server names: nodes are `<vnfName>-<role>-<index>`. */
    vnfName: string;
    /** Count, fixed IPs, image/flavor/network and login of the nodes. */
    spec: NodeGroupSpec;
    /** Security groups of every node port. */
    securityGroupIds: pulumi.Input<string>[];
    /** Addresses every node port may also answer for (the HA VIP). */
    allowedAddresses?: pulumi.Input<string>[];
    /** Nova key pair of the login user. */
    keyPairName?: pulumi.Input<string>;
    /** When set, the group has a Nova server group with this policy (pod affinity). */
    serverGroupPolicy?: "anti-affinity" | "soft-anti-affinity";
    /** Whether node `index` is scheduled into the server group; default: every node. */
    inServerGroup?: (index: number) => boolean;
    /** Heal generations: the entire cluster's, and per node (`<role>-<index>`). */
    heal?: { generation: number; nodes: Record<string, number> };
}

/**
 * Masters or workers: `count` servers named by index, so a new count adds or removes only the tail
 * (`worker-0` … `worker-N-1`) and scale never touches the nodes that stay.
 */
export class NodeGroup extends pulumi.ComponentResource {
    readonly nodes: Server[];
    readonly serverGroup?: openstack.compute.ServerGroup;

    constructor(name: string, args: NodeGroupArgs, opts?: pulumi.ComponentResourceOptions) {
        super("k8s-vnf:openstack:NodeGroup", name, {}, opts);
        const { spec } = args;
        this.serverGroup =
            args.serverGroupPolicy &&
            new openstack.compute.ServerGroup(
                `${name}-server-group`,
                { name: `${args.vnfName}-${spec.role}`, policies: [args.serverGroupPolicy] },
                { parent: this },
            );
        this.nodes = Array.from({ length: spec.count }, (_, i) => {
            const vmName = `${args.vnfName}-${spec.role}-${i}`;
            // A node whose port has not moved yet (change_ext_conn, one node per update) keeps its old placement.
            const unmoved = spec.portMove && i >= spec.portMove.moved ? spec.portMove.from : undefined;
            return new Server(
                `${name}-${i}`,
                {
                    vmName,
                    spec: spec.server,
                    ports: [
                        {
                            networkId: unmoved?.networkId ?? spec.server.networkId,
                            subnetId: unmoved ? unmoved.subnetId : spec.server.subnetId,
                            fixedIp: unmoved ? unmoved.fixedIps[i] : spec.fixedIps[i],
                            securityGroupIds: args.securityGroupIds,
                            allowedAddresses: args.allowedAddresses,
                        },
                    ],
                    keyPairName: args.keyPairName,
                    serverGroupId: (args.inServerGroup?.(i) ?? true) ? this.serverGroup?.id : undefined,
                    metadata: { "k8s-vnf-role": spec.role, "k8s-vnf-vdu": spec.vduId, "k8s-vnf-cp": spec.connectionPoint },
                    replacementTrigger: args.heal && `${args.heal.generation}.${args.heal.nodes[`${spec.role}-${i}`] ?? 0}`,
                },
                { parent: this },
            );
        });
        this.registerOutputs({ addresses: this.nodes.map((n) => n.address) });
    }
}
