/**
 * SOL013 §5.3 attribute selectors of list queries (all_fields, fields, exclude_fields, exclude_default) with each
 * list's default set, and the attribute names each resource has (service/queryAttributes.ts), which filter and
 * selectors may use (§5.2.2, §5.3.2).
 */
import { strict as assert } from "node:assert";
import { LIST_RULES, ListOptions, ListQuery, ListQueryParameter, queryList } from "../service/query";
import { instances, refuses, selected, unpaged } from "./support/queryFixtures";

/** The one instance `id` as `query` presents it. */
function shown(query: ListQuery, id = "i1"): Record<string, unknown> {
    const item = queryList(instances(), query, unpaged()).items.find((found) => found.id === id);
    assert.ok(item, `${id} is listed`);
    return item;
}

describe("query: attribute selectors (SOL013 §5.3)", () => {
    const SIMPLE = ["id", "vnfInstanceName", "vnfInstanceDescription", "vnfProvider", "vnfdVersion", "instantiationState", "_links"];
    const keys = (record: Record<string, unknown>) => Object.keys(record).sort();
    const sorted = (...names: string[]) => [...names].sort();

    it("with none, leave out the default set of VnfInstance, vnfConfigurableProperties included (SOL003 §5.4.2.3.2)", () => {
        assert.deepEqual(keys(shown({})), sorted(...SIMPLE));
    });

    it("exclude_default alone is the same as none", () => {
        assert.deepEqual(shown({ exclude_default: "" }), shown({}));
    });

    it("the default set of VnfLcmOpOcc is its structured results; operationParams, of cardinality 1, stays (SOL003 §5.4.12.3.2, §5.5.2.13)", () => {
        const occ = {
            id: "o1",
            operation: "INSTANTIATE",
            isAutomaticInvocation: false,
            operationParams: { flavourId: "simple" },
            error: { status: 500, detail: "x" },
            resourceChanges: { affectedVnfcs: [] },
            changedInfo: { vnfInstanceName: "n" },
            changedExtConnectivity: [],
            _links: { self: { href: "x" } },
        };
        const [item] = queryList([occ], {}, unpaged(LIST_RULES.opOccs)).items;
        assert.deepEqual(keys(item), sorted("id", "operation", "isAutomaticInvocation", "operationParams", "_links"));
        assert.deepEqual(queryList([occ], { all_fields: "" }, unpaged(LIST_RULES.opOccs)).items[0], occ);
        const listed = (query: ListQuery) => keys(queryList([occ], query, unpaged(LIST_RULES.opOccs)).items[0]);
        assert.deepEqual(listed({ fields: "error" }), sorted("id", "operation", "isAutomaticInvocation", "operationParams", "error", "_links"));
        assert.deepEqual(listed({ fields: "error", exclude_default: "" }), listed({ fields: "error" }));
        assert.deepEqual(listed({ exclude_default: "" }), keys(item));
    });

    it("all_fields returns everything", () => {
        assert.deepEqual(shown({ all_fields: "" }), instances()[0]);
    });

    it("fields alone returns the simple attributes, _links and only the structured attributes listed", () => {
        const item = shown({ fields: "vimConnectionInfo,metadata" });
        assert.deepEqual(keys(item), sorted(...SIMPLE, "vimConnectionInfo", "metadata"));
        assert.deepEqual(item.vimConnectionInfo, instances()[0].vimConnectionInfo);
    });

    it("fields with exclude_default adds the listed attributes to the default response", () => {
        const item = shown({ fields: "vimConnectionInfo", exclude_default: "" });
        assert.deepEqual(keys(item), sorted(...SIMPLE, "vimConnectionInfo"));
    });

    it("fields a/b returns a with its simple attributes and only the listed parts", () => {
        const item = shown({ fields: "instantiatedVnfInfo/scaleStatus" });
        assert.deepEqual(item.instantiatedVnfInfo, {
            flavourId: "simple",
            vnfState: "STARTED",
            scaleStatus: [
                { aspectId: "workers", scaleLevel: 2 },
                { aspectId: "masters", scaleLevel: 0 },
            ],
        });
        assert.equal(item.metadata, undefined);
    });

    it("fields reaches through arrays into each element", () => {
        const item = shown({ fields: "instantiatedVnfInfo/extCpInfo/cpProtocolInfo", exclude_default: "" });
        assert.deepEqual(item.instantiatedVnfInfo, {
            flavourId: "simple",
            vnfState: "STARTED",
            extCpInfo: [{ id: "cp-1", cpdId: "ext", cpProtocolInfo: [{ layerProtocol: "IP_OVER_ETHERNET" }] }],
        });
    });

    it("fields naming an attribute and one of its parts returns the whole attribute", () => {
        const item = shown({ fields: "instantiatedVnfInfo/scaleStatus,instantiatedVnfInfo" });
        assert.deepEqual(item.instantiatedVnfInfo, instances()[0].instantiatedVnfInfo);
    });

    it("fields leaves records without the listed attributes as they are", () => {
        assert.deepEqual(keys(shown({ fields: "instantiatedVnfInfo/scaleStatus" }, "i2")), sorted("id", "vnfInstanceName", "vnfInstanceDescription", "vnfProvider", "instantiationState", "_links"));
    });

    it("exclude_fields returns everything but the listed attributes, defaults included", () => {
        const item = shown({ exclude_fields: "vimConnectionInfo,instantiatedVnfInfo/extCpInfo" });
        assert.deepEqual(keys(item), sorted(...SIMPLE, "vnfConfigurableProperties", "instantiatedVnfInfo", "metadata", "extensions"));
        assert.deepEqual(keys(item.instantiatedVnfInfo as Record<string, unknown>), sorted("flavourId", "vnfState", "scaleStatus"));
    });

    it("exclude_fields reaches through arrays into each element", () => {
        const item = shown({ exclude_fields: "instantiatedVnfInfo/scaleStatus/scaleLevel" });
        assert.deepEqual((item.instantiatedVnfInfo as Record<string, unknown>).scaleStatus, [{ aspectId: "workers" }, { aspectId: "masters" }]);
    });

    it("leave the records given untouched", () => {
        const records = instances();
        queryList(records, { exclude_fields: "instantiatedVnfInfo/scaleStatus/scaleLevel,metadata" }, unpaged());
        queryList(records, { fields: "instantiatedVnfInfo/scaleStatus" }, unpaged());
        queryList(records, {}, unpaged());
        assert.deepEqual(records, instances());
    });

    describe("refusals", () => {
        it("all_fields with any other selector", () => {
            refuses({ all_fields: "", fields: "metadata" }, "all_fields", /cannot be combined with fields/);
            refuses({ all_fields: "", exclude_fields: "metadata" }, "all_fields", /cannot be combined with exclude_fields/);
            refuses({ all_fields: "", exclude_default: "" }, "all_fields", /cannot be combined with exclude_default/);
        });

        it("fields with exclude_fields, and exclude_fields with exclude_default", () => {
            refuses({ fields: "metadata", exclude_fields: "extensions" }, "fields", /cannot be combined with exclude_fields/);
            refuses({ exclude_fields: "extensions", exclude_default: "" }, "exclude_fields", /cannot be combined with exclude_default/);
        });

        it("a value on a flag", () => {
            refuses({ all_fields: "true" }, "all_fields", /is a flag and takes no value, not 'true'/);
            refuses({ exclude_default: "yes" }, "exclude_default", /is a flag/);
        });

        it("an empty list or an empty name in it", () => {
            refuses({ fields: "" }, "fields", /names no attribute/);
            refuses({ exclude_fields: "" }, "exclude_fields", /names no attribute/);
            refuses({ fields: "metadata,,extensions" }, "fields", /'' is not an attribute name/);
            refuses({ exclude_fields: "instantiatedVnfInfo//extCpInfo" }, "exclude_fields", /not an attribute name/);
        });

        it("excluding id or _links, which are always returned, or an op occ's operationParams (cardinality 1)", () => {
            refuses({ exclude_fields: "metadata,_links" }, "exclude_fields", /_links cannot be excluded/);
            refuses({ exclude_fields: "_links/self" }, "exclude_fields", /_links\/self cannot be excluded/);
            refuses({ exclude_fields: "id" }, "exclude_fields", /id cannot be excluded/);
            refuses({ exclude_fields: "error,operationParams/flavourId" }, "exclude_fields", /operationParams\/flavourId cannot be excluded/, unpaged(LIST_RULES.opOccs), []);
        });

        it("any selector on subscriptions, which take none (SOL003 §5.4.18.3.2)", () => {
            const options = unpaged(LIST_RULES.subscriptions);
            refuses({ all_fields: "" }, "all_fields", /takes no attribute selectors/, options);
            refuses({ fields: "filter" }, "fields", /takes no attribute selectors/, options);
            refuses({ exclude_fields: "filter" }, "exclude_fields", /takes no attribute selectors/, options);
            refuses({ exclude_default: "" }, "exclude_default", /takes no attribute selectors/, options);
        });

        it("a selector given twice", () => {
            refuses({ fields: ["metadata", "extensions"] }, "fields", /more than once/);
        });
    });

    it("subscriptions are returned whole and can be filtered", () => {
        const subscriptions = [
            { id: "s1", callbackUri: "http://nfvo/a", filter: { notificationTypes: ["VnfLcmOperationOccurrenceNotification"] }, _links: { self: { href: "x" } } },
            { id: "s2", callbackUri: "http://nfvo/b", _links: { self: { href: "y" } } },
        ];
        const { items } = queryList(subscriptions, { filter: "(eq,filter/notificationTypes,VnfLcmOperationOccurrenceNotification)" }, unpaged(LIST_RULES.subscriptions));
        assert.deepEqual(items, [subscriptions[0]]);
    });
});

describe("query: attribute names each resource has (SOL013 §5.2.2, §5.3.2; SOL003 v2.6.1 data types)", () => {
    const opOccs = unpaged(LIST_RULES.opOccs);
    const subscriptions = unpaged(LIST_RULES.subscriptions);
    /** What an empty list answers to `filter`: nothing, unless the filter is refused. */
    const onEmptyList = (filter: string, options: ListOptions) => queryList([], { filter }, options).items;

    it("a filter, fields or exclude_fields naming an attribute the resource does not have is a 400 naming both", () => {
        refuses({ filter: "(eq,noSuchAttribute,x)" }, "filter", /'noSuchAttribute' is not an attribute of VnfInstance/);
        refuses({ fields: "metadata,noSuchAttribute" }, "fields", /'noSuchAttribute' is not an attribute of VnfInstance/);
        refuses({ exclude_fields: "noSuchAttribute" }, "exclude_fields", /'noSuchAttribute' is not an attribute of VnfInstance/);
        refuses({ filter: "(eq,vnfProvider,ACME);(in,noSuchAttribute,x,y)" }, "filter", /'noSuchAttribute'/);
    });

    it("even when the list is empty, while a known attribute no record has set is fine", () => {
        for (const query of [{ filter: "(eq,noSuchAttribute,x)" }, { fields: "noSuchAttribute" }, { exclude_fields: "noSuchAttribute" }]) {
            refuses(query, Object.keys(query)[0] as ListQueryParameter, /'noSuchAttribute' is not an attribute of VnfInstance/, unpaged(), []);
        }
        assert.deepEqual(queryList([], { filter: "(eq,vnfInstanceDescription,x)" }, unpaged()).items, []);
        assert.deepEqual(queryList([], { fields: "extensions" }, unpaged()).items, []);
        assert.deepEqual(selected("(eq,instantiatedVnfInfo/vnfcResourceInfo/computeResource/vimConnectionId,x)"), []);
        assert.deepEqual(selected("(neq,instantiatedVnfInfo/extVirtualLinkInfo/extLinkPorts/resourceHandle/resourceId,x)"), ["i1", "i2", "i3"]);
    });

    it("nested: a part the structure does not have, or a part of a simple attribute", () => {
        refuses({ filter: "(eq,instantiatedVnfInfo/noSuchPart,x)" }, "filter", /'instantiatedVnfInfo\/noSuchPart' is not an attribute of VnfInstance/);
        refuses({ fields: "instantiatedVnfInfo/scaleStatus/noSuchPart" }, "fields", /'instantiatedVnfInfo\/scaleStatus\/noSuchPart'/);
        refuses({ filter: "(eq,vnfInstanceName/first,alpha)" }, "filter", /'vnfInstanceName\/first' is not an attribute of VnfInstance: vnfInstanceName has no parts/);
        refuses({ exclude_fields: "_links/noSuchLink" }, "exclude_fields", /'_links\/noSuchLink'/);
    });

    it("anything beneath the KeyValuePairs metadata, extensions and vnfConfigurableProperties", () => {
        assert.deepEqual(selected("(eq,metadata/any/depth,x)"), []);
        assert.deepEqual(selected("(eq,extensions/tier,gold)"), ["i1"]);
        assert.deepEqual(selected("(eq,vnfConfigurableProperties/isAutoscaleEnabled,false)"), ["i1"]);
        assert.deepEqual(selected("(eq,vimConnectionInfo/accessInfo/region,RegionOne)"), ["i1"]);
        const metadata = shown({ exclude_fields: "metadata/team,instantiatedVnfInfo/extCpInfo/metadata/zone" }).metadata as Record<string, unknown>;
        assert.deepEqual(Object.keys(metadata).sort(), ["enabled", "labels", "replicas"]);
    });

    it("each list its own data type: VnfLcmOpOcc and LccnSubscription", () => {
        for (const filter of ["(eq,operationParams/flavourId,simple)", "(eq,resourceChanges/affectedVnfcs/computeResource/resourceId,x)", "(eq,changedInfo/metadata/a,b)", "(eq,error/detail,x)", "(eq,_links/cancel/href,x)"]) {
            assert.deepEqual(onEmptyList(filter, opOccs), [], filter);
        }
        refuses({ filter: "(eq,vnfInstanceName,alpha)" }, "filter", /'vnfInstanceName' is not an attribute of VnfLcmOpOcc/, opOccs, []);
        refuses({ fields: "resourceChanges/affectedVnfcs/noSuchPart" }, "fields", /is not an attribute of VnfLcmOpOcc/, opOccs, []);
        for (const filter of ["(eq,callbackUri,x)", "(eq,filter/vnfInstanceSubscriptionFilter/vnfProductsFromProviders/vnfProducts/versions/vnfdVersions,1.0)", "(eq,filter/operationStates,FAILED_TEMP)"]) {
            assert.deepEqual(onEmptyList(filter, subscriptions), [], filter);
        }
        refuses({ filter: "(eq,filter/noSuchPart,x)" }, "filter", /'filter\/noSuchPart' is not an attribute of LccnSubscription/, subscriptions, []);
        refuses({ filter: "(eq,operationState,PROCESSING)" }, "filter", /'operationState' is not an attribute of LccnSubscription/, subscriptions, []);
    });

    it("the attributes this service shows beyond SOL003 v2.6.1's tables: an op occ's progress, a subscription's verbosity", () => {
        assert.deepEqual(onEmptyList("(gt,progress/resourcesDone,0)", opOccs), []);
        assert.deepEqual(onEmptyList("(eq,verbosity,FULL)", subscriptions), []);
    });
});
