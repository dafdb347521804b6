/**
 * What the LCM benches (lcm-api.ts, lcm-replicas.ts) store before they measure: 1,000 instantiated instances
 * of the simple flavour (their stack config holding two passwords, so each row is sealed) and 10,000 completed
 * scale occurrences spread over them, as the service would have written them.
 */
import { randomUUID } from "node:crypto";
import { instanceLinks } from "../service/instanceView";
import { instanceHref, opOccHref } from "../service/links";
import { Change } from "../service/store";

export const INSTANCES = 1_000;
export const OP_OCCS = 10_000;

/** The base URL the stored `_links` name (a request's own base is the service's). */
const STORED_BASE = "http://lcm.example:9890";

export function storedRecords(): { instanceIds: string[]; opIds: string[]; changes: Change[] } {
    const now = Date.now();
    const instanceIds = Array.from({ length: INSTANCES }, () => randomUUID());
    const opIds = Array.from({ length: OP_OCCS }, () => randomUUID());
    const instances = instanceIds.map((id, i) => ({
        table: "vnf_instances" as const,
        id,
        body: {
            id,
            vnfdId: "bench",
            vnfInstanceName: `vnf-${i}`,
            instantiationState: "INSTANTIATED",
            instantiatedVnfInfo: { flavourId: "simple", vnfState: "STARTED", scaleStatus: [{ aspectId: "worker_instance", scaleLevel: 0 }], vnfcResourceInfo: [] },
            __stackConfig: { flavour: "simple", image: "img", flavor: "flv", network: { networkId: "net" }, masters: { password: "pw-bench" }, workers: { count: 2, minCount: 2, maxCount: 4, password: "pw-bench" } },
            __scale: { worker_instance: { count: 2, min: 2, max: 4 } },
            _links: instanceLinks(STORED_BASE, id, "INSTANTIATED", { scalable: true }),
            __created: now + i,
        },
    }));
    const opOccs = opIds.map((id, i) => {
        const instanceId = instanceIds[i % INSTANCES];
        const body = {
            id,
            vnfInstanceId: instanceId,
            operation: "SCALE",
            operationState: "COMPLETED",
            startTime: new Date(now).toISOString(),
            operationParams: { type: "SCALE_OUT", aspectId: "worker_instance" },
            _links: { self: { href: opOccHref(STORED_BASE, id) }, vnfInstance: { href: instanceHref(STORED_BASE, instanceId) } },
            __created: now + i,
        };
        return { table: "op_occs" as const, id, body };
    });
    return { instanceIds, opIds, changes: [...instances, ...opOccs] };
}
