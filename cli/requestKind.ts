/**
 * Which SOL003 request a body is when it is not an InstantiateVnfRequest (it has no flavourId): told by the
 * fields only that request has (ETSI GS NFV-SOL 003 v2.6.1 §5.5.2: CreateVnfRequest vnfdId, ScaleVnfRequest
 * type and aspectId, ScaleVnfToLevelRequest instantiationLevelId or scaleInfo, ChangeVnfFlavourRequest
 * newFlavourId, TerminateVnfRequest terminationType, HealVnfRequest cause (and Tacker's vnfcInstanceId),
 * OperateVnfRequest changeStateTo, ChangeExtVnfConnectivityRequest extVirtualLinks alone).
 */
const OTHER_REQUESTS: readonly (readonly [string, readonly string[]])[] = [
    ["CreateVnfRequest", ["vnfdId"]],
    ["ScaleVnfRequest", ["type", "aspectId"]],
    ["ScaleVnfToLevelRequest", ["instantiationLevelId"]],
    ["ScaleVnfToLevelRequest", ["scaleInfo"]],
    ["ChangeVnfFlavourRequest", ["newFlavourId"]],
    ["TerminateVnfRequest", ["terminationType"]],
    ["HealVnfRequest", ["vnfcInstanceId"]],
    ["HealVnfRequest", ["cause"]],
    ["OperateVnfRequest", ["changeStateTo"]],
    ["ChangeExtVnfConnectivityRequest", ["extVirtualLinks"]],
];

/** The name of the other SOL003 request `body` is, or undefined (an InstantiateVnfRequest, or none known). */
export function otherRequestKind(body: unknown): string | undefined {
    if (!body || typeof body !== "object" || Array.isArray(body) || "flavourId" in body) return undefined;
    return OTHER_REQUESTS.find(([, fields]) => fields.every((field) => field in body))?.[0];
}
