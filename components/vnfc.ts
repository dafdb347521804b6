import * as pulumi from "@pulumi/pulumi";
import { Server } from "./server";

/**
 * One VNF component (VM) as the LCM service reports it in `instantiatedVnfInfo.vnfcResourceInfo`. The id is
 * the VM name, so it stays the same when a heal replaces the server underneath.
 */
export interface VnfcResource {
    id: string;
    vduId: string;
    cpdId: string;
    serverId: string;
    portId: string;
    address: string;
    sshAddress: string;
}

export function vnfcOf(server: Server, id: string, vduId: string, cpdId: string): pulumi.Output<VnfcResource> {
    return pulumi
        .all([server.instance.id, server.ports[0].id, server.address, server.sshAddress])
        .apply(([serverId, portId, address, sshAddress]) => ({ id, vduId, cpdId, serverId, portId, address, sshAddress }));
}
