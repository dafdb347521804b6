/**
 * Which SOL003 request a body is when it is not an InstantiateVnfRequest (it has no flavourId), told by fields
 * no InstantiateVnfRequest has (ETSI GS NFV-SOL 003 v2.6.1 §5.5.2: CreateVnfRequest vnfdId, ChangeVnfFlavourRequest
 * newFlavourId, ScaleVnfRequest type and aspectId, ScaleVnfToLevelRequest scaleInfo, TerminateVnfRequest
 * terminationType, HealVnfRequest cause (and Tacker's vnfcInstanceId), OperateVnfRequest changeStateTo).
 * ChangeExtVnfConnectivityRequest shares all its fields with InstantiateVnfRequest: it is told by
 * extVirtualLinks without this project's installation parameters. An instantiate body that only lacks its
 * flavourId is none of these, so its own problem is what is reported.
 */
type Body = Record<string, unknown>;

const INSTALLATION_PARAMS = ["k8s_cluster_installation_param", "private_registry_installation_param"];

const OTHER_REQUESTS: readonly (readonly [string, (body: Body) => boolean])[] = [
    ["CreateVnfRequest", (b) => "vnfdId" in b],
    ["ChangeVnfFlavourRequest", (b) => "newFlavourId" in b],
    ["ScaleVnfRequest", (b) => "type" in b && "aspectId" in b],
    ["ScaleVnfToLevelRequest", (b) => "scaleInfo" in b],
    ["TerminateVnfRequest", (b) => "terminationType" in b],
    ["HealVnfRequest", (b) => "vnfcInstanceId" in b || "cause" in b],
    ["OperateVnfRequest", (b) => "changeStateTo" in b],
    ["ChangeExtVnfConnectivityRequest", (b) => "extVirtualLinks" in b && !INSTALLATION_PARAMS.some((p) => p in ((b.additionalParams ?? {}) as Body))],
];

/** The name of the other SOL003 request `body` is, or undefined (an InstantiateVnfRequest, or none known). */
export function otherRequestKind(body: unknown): string | undefined {
    if (!body || typeof body !== "object" || Array.isArray(body) || "flavourId" in body) return undefined;
    return OTHER_REQUESTS.find(([, is]) => is(body as Body))?.[0];
}
