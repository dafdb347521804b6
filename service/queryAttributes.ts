/**
 * The attribute names a list query may use (SOL013 §5.2 filter, §5.3 fields and exclude_fields), per list: the
 * data type of its items as ETSI GS NFV-SOL 003 v2.6.1 defines it, nested structures included. A name outside
 * the data type is a 400 whatever the records hold, so even on an empty list; a name inside it is fine on
 * records that do not set it.
 */
import { ListQueryParameter, QueryError } from "./queryParameters";

/** A simple attribute (string, number, boolean, or an array of those): nothing beneath it. */
const SIMPLE = "simple";
/** KeyValuePairs, or an object whose structure SOL003 leaves open: any name beneath it. */
const OPEN = "open";

type Attribute = typeof SIMPLE | typeof OPEN | Structure;
/** A structure's attributes by name. An array of structures is named like one structure: a path crosses arrays. */
interface Structure {
    readonly [name: string]: Attribute;
}

/** The data type of a list's items: its name, for error details, and its attributes. */
export interface ItemType {
    readonly name: string;
    readonly attributes: Structure;
}

/** A structure with the simple attributes `simple` (names separated by spaces) and the structured ones `structured`. */
function structure(simple: string, structured: Record<string, Attribute> = {}): Structure {
    return { ...Object.fromEntries(simple.split(" ").filter(Boolean).map((name) => [name, SIMPLE])), ...structured };
}

/** A `_links` structure: each link named is a Link, `{ href }`. */
function links(names: string): Structure {
    return Object.fromEntries(names.split(" ").map((name) => [name, structure("href")]));
}

// SOL003 v2.6.1 §4.4.1: ResourceHandle and VimConnectionInfo.
const RESOURCE_HANDLE = structure("vimConnectionId resourceProviderId resourceId vimLevelResourceType");
const VIM_CONNECTION_INFO = structure("id vimId vimType", { interfaceInfo: OPEN, accessInfo: OPEN, extra: OPEN });

// SOL003 v2.6.1 §5.5.3: the structures of VnfInstance and VnfLcmOpOcc.
const CP_PROTOCOL_INFO = structure("layerProtocol", {
    ipOverEthernet: structure("macAddress", { ipAddresses: structure("type addresses isDynamic subnetId", { addressRange: structure("minAddress maxAddress") }) }),
});
const SCALE_INFO = structure("aspectId scaleLevel");
const VNF_LINK_PORT_INFO = structure("id cpInstanceId cpInstanceType", { resourceHandle: RESOURCE_HANDLE });
const EXT_VIRTUAL_LINK_INFO = structure("id", { resourceHandle: RESOURCE_HANDLE, extLinkPorts: structure("id cpInstanceId", { resourceHandle: RESOURCE_HANDLE }) });

/** SOL003 v2.6.1 §5.5.2.2, table 5.5.2.2-1. */
const VNF_INSTANCE = structure("id vnfInstanceName vnfInstanceDescription vnfdId vnfProvider vnfProductName vnfSoftwareVersion vnfdVersion instantiationState", {
    vnfConfigurableProperties: OPEN,
    vimConnectionInfo: VIM_CONNECTION_INFO,
    instantiatedVnfInfo: structure("flavourId vnfState localizationLanguage", {
        scaleStatus: SCALE_INFO,
        maxScaleLevels: SCALE_INFO,
        extCpInfo: structure("id cpdId extLinkPortId associatedVnfcCpId associatedVnfVirtualLinkId", { cpProtocolInfo: CP_PROTOCOL_INFO, metadata: OPEN }),
        extVirtualLinkInfo: EXT_VIRTUAL_LINK_INFO,
        extManagedVirtualLinkInfo: structure("id vnfVirtualLinkDescId", { networkResource: RESOURCE_HANDLE, vnfLinkPorts: VNF_LINK_PORT_INFO }),
        monitoringParameters: structure("id name performanceMetric"),
        vnfcResourceInfo: structure("id vduId storageResourceIds reservationId", {
            computeResource: RESOURCE_HANDLE,
            vnfcCpInfo: structure("id cpdId vnfExtCpId vnfLinkPortId", { cpProtocolInfo: CP_PROTOCOL_INFO, metadata: OPEN }),
            metadata: OPEN,
        }),
        vnfVirtualLinkResourceInfo: structure("id vnfVirtualLinkDescId reservationId", { networkResource: RESOURCE_HANDLE, vnfLinkPorts: VNF_LINK_PORT_INFO, metadata: OPEN }),
        virtualStorageResourceInfo: structure("id virtualStorageDescId reservationId", { storageResource: RESOURCE_HANDLE, metadata: OPEN }),
    }),
    metadata: OPEN,
    extensions: OPEN,
    _links: links("self indicators instantiate terminate scale scaleToLevel changeFlavour heal operate changeExtConn"),
});

/** SOL003 v2.6.1 §5.5.2.13, table 5.5.2.13-1. */
const VNF_LCM_OP_OCC = structure("id operationState stateEnteredTime startTime vnfInstanceId grantId operation isAutomaticInvocation isCancelPending cancelMode", {
    // The request of the operation, of whichever data type that operation takes.
    operationParams: OPEN,
    // ProblemDetails, which may carry attributes beyond its own (SOL013 §6.3).
    error: OPEN,
    resourceChanges: structure("", {
        affectedVnfcs: structure("id vduId changeType affectedVnfcCpIds addedStorageResourceIds removedStorageResourceIds", { computeResource: RESOURCE_HANDLE, metadata: OPEN }),
        affectedVirtualLinks: structure("id vnfVirtualLinkDescId changeType", { networkResource: RESOURCE_HANDLE, metadata: OPEN }),
        affectedVirtualStorages: structure("id virtualStorageDescId changeType", { storageResource: RESOURCE_HANDLE, metadata: OPEN }),
    }),
    changedInfo: structure("vnfInstanceName vnfInstanceDescription vnfdId vnfProvider vnfProductName vnfSoftwareVersion vnfdVersion", {
        vnfConfigurableProperties: OPEN,
        metadata: OPEN,
        extensions: OPEN,
        vimConnectionInfo: VIM_CONNECTION_INFO,
    }),
    changedExtConnectivity: EXT_VIRTUAL_LINK_INFO,
    _links: links("self vnfInstance grant cancel retry rollback fail"),
});

/** SOL003 v2.6.1 §5.5.2.16, table 5.5.2.16-1, with LifecycleChangeNotificationsFilter and §4.4.1.5 VnfInstanceSubscriptionFilter. */
const LCCN_SUBSCRIPTION = structure("id callbackUri", {
    filter: structure("notificationTypes operationTypes operationStates", {
        vnfInstanceSubscriptionFilter: structure("vnfdIds vnfInstanceIds vnfInstanceNames", {
            vnfProductsFromProviders: structure("vnfProvider", { vnfProducts: structure("vnfProductName", { versions: structure("vnfSoftwareVersion vnfdVersions") }) }),
        }),
    }),
    _links: links("self"),
});

/** The data types of the three lists' items; beyond SOL003's tables, the attributes this service shows too. */
export const ITEM_TYPES = {
    vnfInstance: { name: "VnfInstance", attributes: VNF_INSTANCE },
    // progress: how far a running operation is (service/lifecycle.ts), shaped by this service alone.
    vnfLcmOpOcc: { name: "VnfLcmOpOcc", attributes: { ...VNF_LCM_OP_OCC, progress: OPEN } },
    // verbosity: the notifications' verbosity the subscription asked for.
    lccnSubscription: { name: "LccnSubscription", attributes: { ...LCCN_SUBSCRIPTION, verbosity: SIMPLE } },
} as const satisfies Record<string, ItemType>;

/**
 * The parts of the attribute name `name` (SOL013 §5.2.2: names joined by '/', each descending into a structured
 * attribute), which must name an attribute of `itemType`; otherwise a QueryError for `parameter`.
 */
export function parseAttributeName(parameter: ListQueryParameter, name: string, itemType: ItemType): string[] {
    const path = name.split("/");
    if (path.some((part) => part === "")) throw new QueryError(parameter, `'${name}' is not an attribute name (an empty part between '/')`);
    let attribute: Attribute = itemType.attributes;
    for (const [depth, part] of path.entries()) {
        if (attribute === OPEN) break;
        const parent = path.slice(0, depth).join("/");
        const notAnAttribute = (why: string) => new QueryError(parameter, `'${name}' is not an attribute of ${itemType.name}${why}`);
        if (attribute === SIMPLE) throw notAnAttribute(`: ${parent} has no parts`);
        if (!Object.hasOwn(attribute, part)) throw notAnAttribute(depth === 0 ? "" : `: ${parent} has no ${part}`);
        attribute = attribute[part];
    }
    return path;
}
