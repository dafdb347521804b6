import { strict as assert } from "node:assert";
import { ProblemError } from "../service/problem";
import { LIST_RULES, ListOptions, ListQuery, ListQueryParameter, nextPageLink, QueryError, queryList } from "../service/query";

const links = (id: string) => ({ self: { href: `http://vnfm/vnflcm/v1/vnf_instances/${id}` } });

/** Three VNF instances, in creation order, with the attributes the filter and selector tests look at. */
function instances(): Record<string, unknown>[] {
    return [
        {
            id: "i1",
            vnfInstanceName: "alpha",
            vnfInstanceDescription: "first",
            vnfProvider: "ACME",
            vnfdVersion: "1.0",
            instantiationState: "INSTANTIATED",
            vnfConfigurableProperties: { isAutoscaleEnabled: false },
            vimConnectionInfo: [{ id: "vim-1", vimType: "ETSINFV.OPENSTACK_KEYSTONE.v_2", accessInfo: { region: "RegionOne" } }],
            instantiatedVnfInfo: {
                flavourId: "simple",
                vnfState: "STARTED",
                scaleStatus: [
                    { aspectId: "workers", scaleLevel: 2 },
                    { aspectId: "masters", scaleLevel: 0 },
                ],
                extCpInfo: [{ id: "cp-1", cpdId: "ext", cpProtocolInfo: [{ layerProtocol: "IP_OVER_ETHERNET" }], metadata: { zone: "a" } }],
            },
            metadata: { team: "core", replicas: 3, enabled: true, labels: ["blue", "green"] },
            extensions: { tier: "gold" },
            _links: links("i1"),
        },
        {
            id: "i2",
            vnfInstanceName: "beta",
            vnfInstanceDescription: "(beta), the second",
            vnfProvider: "ACME",
            instantiationState: "NOT_INSTANTIATED",
            metadata: { team: "edge", replicas: 10, enabled: false, labels: ["red"] },
            _links: links("i2"),
        },
        {
            id: "i3",
            vnfInstanceName: "it's",
            vnfInstanceDescription: "",
            vnfProvider: "Other, Inc.",
            instantiationState: "INSTANTIATED",
            instantiatedVnfInfo: { flavourId: "big", vnfState: "STOPPED", scaleStatus: [{ aspectId: "workers", scaleLevel: 5 }] },
            _links: links("i3"),
        },
    ];
}

const unpaged = (rules: (typeof LIST_RULES)[keyof typeof LIST_RULES] = LIST_RULES.vnfInstances): ListOptions => ({ ...rules, pageSize: Infinity });

/** The ids of the instances a filter selects, in order. */
function selected(filter: string, records = instances()): unknown[] {
    return queryList(records, { filter }, unpaged()).items.map((item) => item.id);
}

/** The one instance `id` as `query` presents it. */
function shown(query: ListQuery, id = "i1"): Record<string, unknown> {
    const item = queryList(instances(), query, unpaged()).items.find((found) => found.id === id);
    assert.ok(item, `${id} is listed`);
    return item;
}

/** Asserts that `query` is refused with a 400 whose detail names `parameter` and matches `detail`. */
function refuses(query: ListQuery, parameter: ListQueryParameter, detail: RegExp, options = unpaged(), records = instances()): void {
    assert.throws(
        () => queryList(records, query, options),
        (e: unknown) => {
            assert.ok(e instanceof QueryError, `a QueryError, not ${String(e)}`);
            assert.equal(e.status, 400);
            assert.equal(e.parameter, parameter);
            assert.ok(e.detail.startsWith(`${parameter}: `), e.detail);
            assert.match(e.detail, detail);
            return true;
        },
    );
}

describe("query: attribute-based filtering (SOL013 §5.2)", () => {
    describe("each operator", () => {
        it("eq and neq compare one value", () => {
            assert.deepEqual(selected("(eq,vnfInstanceName,beta)"), ["i2"]);
            assert.deepEqual(selected("(neq,vnfInstanceName,beta)"), ["i1", "i3"]);
        });

        it("in and nin take a list of values", () => {
            assert.deepEqual(selected("(in,vnfInstanceName,alpha,beta,gamma)"), ["i1", "i2"]);
            assert.deepEqual(selected("(nin,vnfInstanceName,alpha,beta)"), ["i3"]);
        });

        it("cont and ncont look for any of the values inside a string", () => {
            assert.deepEqual(selected("(cont,vnfInstanceName,zzz,lph)"), ["i1"]);
            assert.deepEqual(selected("(ncont,vnfInstanceName,lph,et)"), ["i3"]);
        });

        it("gt, gte, lt and lte compare numbers as numbers (10 > 3)", () => {
            assert.deepEqual(selected("(gt,metadata/replicas,3)"), ["i2"]);
            assert.deepEqual(selected("(gte,metadata/replicas,3)"), ["i1", "i2"]);
            assert.deepEqual(selected("(lt,metadata/replicas,10)"), ["i1"]);
            assert.deepEqual(selected("(lte,metadata/replicas,10)"), ["i1", "i2"]);
            assert.deepEqual(selected("(eq,metadata/replicas,3.0)"), ["i1"]);
        });

        it("gt and lt order strings", () => {
            assert.deepEqual(selected("(gt,vnfInstanceName,alpha)"), ["i2", "i3"]);
            assert.deepEqual(selected("(lt,vnfInstanceName,beta)"), ["i1"]);
        });

        it("booleans match true and false", () => {
            assert.deepEqual(selected("(eq,metadata/enabled,true)"), ["i1"]);
            assert.deepEqual(selected("(eq,metadata/enabled,false)"), ["i2"]);
            assert.deepEqual(selected("(neq,metadata/enabled,true)"), ["i2", "i3"]);
        });

        it("date-times compare as instants, whatever their offset or precision", () => {
            const occs = [
                { id: "o1", startTime: "2024-05-01T07:59:59Z" },
                { id: "o2", startTime: "2024-05-01T09:30:00.000Z" },
            ];
            const ids = (filter: string) => queryList(occs, { filter }, unpaged(LIST_RULES.opOccs)).items.map((item) => item.id);
            // 10:00+02:00 is 08:00Z: o2 is later although "09:30" sorts before "10:00" as text
            assert.deepEqual(ids("(gt,startTime,2024-05-01T10:00:00+02:00)"), ["o2"]);
            assert.deepEqual(ids("(lt,startTime,2024-05-01T10:00:00+02:00)"), ["o1"]);
            assert.deepEqual(ids("(eq,startTime,2024-05-01T09:30:00Z)"), ["o2"]);
        });

        it("a value that is not of the attribute's type matches nothing, so its negation matches all", () => {
            assert.deepEqual(selected("(eq,metadata/replicas,three)"), []);
            assert.deepEqual(selected("(gt,metadata/replicas,three)"), []);
            assert.deepEqual(selected("(neq,metadata/replicas,three)"), ["i1", "i2", "i3"]);
            assert.deepEqual(selected("(eq,metadata/enabled,yes)"), []);
        });
    });

    describe("attribute paths", () => {
        it("descend into structured attributes with '/'", () => {
            assert.deepEqual(selected("(eq,instantiatedVnfInfo/vnfState,STOPPED)"), ["i3"]);
            assert.deepEqual(selected("(eq,vimConnectionInfo/accessInfo/region,RegionOne)"), ["i1"]);
        });

        it("across an array, hold when any element matches", () => {
            assert.deepEqual(selected("(eq,instantiatedVnfInfo/scaleStatus/aspectId,masters)"), ["i1"]);
            assert.deepEqual(selected("(gt,instantiatedVnfInfo/scaleStatus/scaleLevel,4)"), ["i3"]);
            assert.deepEqual(selected("(eq,metadata/labels,green)"), ["i1"]);
            assert.deepEqual(selected("(in,metadata/labels,red,green)"), ["i1", "i2"]);
        });

        it("with neq, nin and ncont across an array, hold only when no element matches", () => {
            assert.deepEqual(selected("(neq,instantiatedVnfInfo/scaleStatus/aspectId,masters)"), ["i2", "i3"]);
            assert.deepEqual(selected("(nin,metadata/labels,green,purple)"), ["i2", "i3"]);
            assert.deepEqual(selected("(ncont,metadata/labels,ee)"), ["i2", "i3"]);
        });

        it("an absent attribute fails eq, in, cont, gt... and passes neq, nin, ncont", () => {
            assert.deepEqual(selected("(eq,vnfdVersion,1.0)"), ["i1"]);
            assert.deepEqual(selected("(neq,vnfdVersion,1.0)"), ["i2", "i3"]);
            assert.deepEqual(selected("(in,vnfdVersion,1.0,2.0)"), ["i1"]);
            assert.deepEqual(selected("(nin,vnfdVersion,2.0)"), ["i1", "i2", "i3"]);
            assert.deepEqual(selected("(cont,extensions/tier,ol)"), ["i1"]);
            assert.deepEqual(selected("(ncont,extensions/tier,ol)"), ["i2", "i3"]);
            assert.deepEqual(selected("(gte,instantiatedVnfInfo/scaleStatus/scaleLevel,0)"), ["i1", "i3"]);
        });

        it("a path through a simple attribute reaches nothing", () => {
            assert.deepEqual(selected("(eq,vnfInstanceName/first,alpha)"), []);
            assert.deepEqual(selected("(neq,vnfInstanceName/first,alpha)"), ["i1", "i2", "i3"]);
        });

        it("an object is equal to no value", () => {
            assert.deepEqual(selected("(eq,instantiatedVnfInfo,simple)"), []);
        });

        it("reach attributes the selectors leave out of the response", () => {
            const { items } = queryList(instances(), { filter: "(eq,vimConnectionInfo/id,vim-1)" }, unpaged());
            assert.deepEqual(
                items.map((item) => item.id),
                ["i1"],
            );
            assert.equal(items[0].vimConnectionInfo, undefined);
        });
    });

    it("all expressions separated by ';' must hold", () => {
        assert.deepEqual(selected("(eq,vnfProvider,ACME);(eq,instantiationState,INSTANTIATED)"), ["i1"]);
        assert.deepEqual(selected("(eq,vnfProvider,ACME);(eq,vnfProvider,ACME)"), ["i1", "i2"]);
        assert.deepEqual(selected("(eq,vnfProvider,ACME);(eq,vnfInstanceName,'it''s')"), []);
    });

    describe("values in single quotes", () => {
        it("may hold commas, brackets and semicolons", () => {
            assert.deepEqual(selected("(eq,vnfProvider,'Other, Inc.')"), ["i3"]);
            assert.deepEqual(selected("(eq,vnfInstanceDescription,'(beta), the second')"), ["i2"]);
            assert.deepEqual(selected("(cont,vnfInstanceDescription,'a);(b',beta)"), ["i2"]);
        });

        it("write a quote as two quotes", () => {
            assert.deepEqual(selected("(eq,vnfInstanceName,'it''s')"), ["i3"]);
            assert.deepEqual(selected("(in,vnfInstanceName,'''',alpha)"), ["i1"]);
        });

        it("'' is the empty string", () => {
            assert.deepEqual(selected("(eq,vnfInstanceDescription,'')"), ["i3"]);
        });

        it("mix with plain values in one list", () => {
            assert.deepEqual(selected("(in,vnfProvider,'Other, Inc.',ACME)"), ["i1", "i2", "i3"]);
        });
    });

    describe("refusals, with 400 naming the filter and what is wrong", () => {
        it("an unknown operator", () => {
            refuses({ filter: "(like,vnfInstanceName,alpha)" }, "filter", /unknown operator 'like' in \(like,vnfInstanceName,alpha\)/);
            refuses({ filter: "(EQ,vnfInstanceName,alpha)" }, "filter", /unknown operator 'EQ'/);
        });

        it("too many values for a one-value operator", () => {
            for (const op of ["eq", "neq", "gt", "gte", "lt", "lte"]) {
                refuses({ filter: `(${op},metadata/replicas,1,2)` }, "filter", new RegExp(`${op} takes one value, \\(${op},metadata/replicas,1,2\\) has 2`));
            }
        });

        it("no value, no attribute name, or an empty value", () => {
            refuses({ filter: "(eq,vnfInstanceName)" }, "filter", /no value/);
            refuses({ filter: "(in,vnfInstanceName)" }, "filter", /no value/);
            refuses({ filter: "(eq)" }, "filter", /no attribute name/);
            refuses({ filter: "(eq,vnfInstanceName,)" }, "filter", /empty value/);
            refuses({ filter: "(in,vnfInstanceName,a,,b)" }, "filter", /empty value/);
        });

        it("attribute names that are not paths", () => {
            refuses({ filter: "(eq,metadata//team,core)" }, "filter", /'metadata\/\/team' is not an attribute name/);
            refuses({ filter: "(eq,/metadata,core)" }, "filter", /'\/metadata' is not an attribute name/);
            refuses({ filter: "(eq,metadata/,core)" }, "filter", /'metadata\/' is not an attribute name/);
            refuses({ filter: "(eq,,core)" }, "filter", /'' is not an attribute name/);
        });

        it("a quote in a plain value, or a quoted value left open", () => {
            refuses({ filter: "(eq,vnfInstanceName,it's)" }, "filter", /must be quoted as 'it''s'/);
            refuses({ filter: "(eq,vnfInstanceName,'it's')" }, "filter", /'s' after a value/);
            refuses({ filter: "(eq,vnfInstanceName,'alpha)" }, "filter", /unterminated quoted value/);
        });

        it("broken brackets and separators", () => {
            refuses({ filter: "eq,vnfInstanceName,alpha" }, "filter", /missing '\('/);
            refuses({ filter: "(eq,vnfInstanceName,alpha" }, "filter", /missing '\)'/);
            refuses({ filter: "(eq,vnfInstanceName,alpha)x" }, "filter", /expected ';' after \(eq,vnfInstanceName,alpha\), found 'x'/);
            refuses({ filter: "(eq,vnfInstanceName,alpha)(eq,vnfProvider,ACME)" }, "filter", /expected ';'/);
            refuses({ filter: "(eq,vnfInstanceName,alpha);" }, "filter", /missing '\('/);
            refuses({ filter: "(eq,vnfInstanceName,alpha);;(eq,vnfProvider,ACME)" }, "filter", /missing '\('/);
        });

        it("an empty filter, or one given twice", () => {
            refuses({ filter: "" }, "filter", /is empty/);
            refuses({ filter: ["(eq,vnfProvider,ACME)", "(eq,vnfInstanceName,beta)"] }, "filter", /more than once/);
        });

        it("even when the list is empty", () => {
            refuses({ filter: "(like,a,b)" }, "filter", /unknown operator/, unpaged(), []);
        });

        it("as a ProblemError the service's error handler turns into a 400 ProblemDetails", () => {
            try {
                queryList([], { filter: "(like,a,b)" }, unpaged());
                assert.fail("accepted");
            } catch (e) {
                assert.ok(e instanceof ProblemError);
                assert.equal(e.status, 400);
                assert.equal(e.title, "Bad Request");
                assert.equal((e as Error).name, "QueryError");
            }
        });
    });
});

describe("query: attribute selectors (SOL013 §5.3)", () => {
    const SIMPLE = ["id", "vnfInstanceName", "vnfInstanceDescription", "vnfProvider", "vnfdVersion", "instantiationState", "_links"];
    const keys = (record: Record<string, unknown>) => Object.keys(record).sort();
    const sorted = (...names: string[]) => [...names].sort();

    it("with none, leave out the default set of VnfInstance (SOL003 §5.4.2.3.2)", () => {
        assert.deepEqual(keys(shown({})), sorted(...SIMPLE, "vnfConfigurableProperties"));
    });

    it("exclude_default alone is the same as none", () => {
        assert.deepEqual(shown({ exclude_default: "" }), shown({}));
    });

    it("the default set of VnfLcmOpOcc is its five structured results (SOL003 §5.4.12.3.2)", () => {
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
        assert.deepEqual(keys(item), sorted("id", "operation", "isAutomaticInvocation", "_links"));
        assert.deepEqual(queryList([occ], { all_fields: "" }, unpaged(LIST_RULES.opOccs)).items[0], occ);
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
        assert.deepEqual(keys(item), sorted(...SIMPLE, "vnfConfigurableProperties", "vimConnectionInfo"));
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

        it("excluding id or _links, which are always returned", () => {
            refuses({ exclude_fields: "metadata,_links" }, "exclude_fields", /_links cannot be excluded/);
            refuses({ exclude_fields: "_links/self" }, "exclude_fields", /_links\/self cannot be excluded/);
            refuses({ exclude_fields: "id" }, "exclude_fields", /id cannot be excluded/);
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

describe("query: paging (SOL013 §5.4.2)", () => {
    const BASE = "http://vnfm:9890/vnflcm/v1/vnf_instances";

    /** Ten instances n0..n9; n2 and n5 are not instantiated. */
    function many(): Record<string, unknown>[] {
        return Array.from({ length: 10 }, (_, i) => ({
            id: `n${i}`,
            instantiationState: i === 2 || i === 5 ? "NOT_INSTANTIATED" : "INSTANTIATED",
            metadata: { index: i },
            _links: links(`n${i}`),
        }));
    }

    /** The query a client sends when it follows a Link header, as fastify parses it. */
    function followed(link: string): ListQuery {
        const match = /^<(.+)>; rel="next"$/.exec(link);
        assert.ok(match, link);
        const url = new URL(match[1]);
        assert.equal(`${url.origin}${url.pathname}`, BASE);
        return Object.fromEntries(url.searchParams);
    }

    it("walks three pages with a filter, following the Link header, each item once", () => {
        const records = many();
        const options = { ...LIST_RULES.vnfInstances, pageSize: 3 };
        const pages: unknown[][] = [];
        let query: ListQuery = { filter: "(neq,instantiationState,NOT_INSTANTIATED)" };
        for (;;) {
            const page = queryList(records, query, options);
            pages.push(page.items.map((item) => item.id));
            if (!page.nextMarker) break;
            query = followed(nextPageLink(BASE, query, page.nextMarker));
            assert.equal(query.filter, "(neq,instantiationState,NOT_INSTANTIATED)");
        }
        assert.deepEqual(pages, [
            ["n0", "n1", "n3"],
            ["n4", "n6", "n7"],
            ["n8", "n9"],
        ]);
    });

    it("keeps the selectors from page to page", () => {
        const records = many();
        const options = { ...LIST_RULES.vnfInstances, pageSize: 4 };
        const first = queryList(records, { all_fields: "" }, options);
        assert.ok(first.nextMarker);
        const query = followed(nextPageLink(BASE, { all_fields: "" }, first.nextMarker));
        assert.deepEqual(query, { all_fields: "", nextpage_opaque_marker: first.nextMarker });
        const second = queryList(records, query, options);
        assert.deepEqual(second.items[0], records[4]);
        assert.equal(queryList(records, { nextpage_opaque_marker: first.nextMarker }, options).items[0].metadata, undefined);
    });

    it("gives no marker when the last page is exactly full", () => {
        const page = queryList(many(), { filter: "(lt,metadata/index,3)" }, { ...LIST_RULES.vnfInstances, pageSize: 3 });
        assert.deepEqual(
            page.items.map((item) => item.id),
            ["n0", "n1", "n2"],
        );
        assert.equal(page.nextMarker, undefined);
    });

    it("gives no marker when everything fits", () => {
        assert.equal(queryList(many(), {}, { ...LIST_RULES.vnfInstances, pageSize: 10 }).nextMarker, undefined);
        assert.equal(queryList([], {}, { ...LIST_RULES.vnfInstances, pageSize: 1 }).nextMarker, undefined);
    });

    it("shows on a later page what was created meanwhile, and nothing twice", () => {
        const records = many().slice(0, 4);
        const options = { ...LIST_RULES.vnfInstances, pageSize: 2 };
        const first = queryList(records, {}, options);
        records.push({ id: "late", instantiationState: "INSTANTIATED" });
        const second = queryList(records, { nextpage_opaque_marker: first.nextMarker }, options);
        const third = queryList(records, { nextpage_opaque_marker: second.nextMarker }, options);
        assert.deepEqual(
            [...first.items, ...second.items, ...third.items].map((item) => item.id),
            ["n0", "n1", "n2", "n3", "late"],
        );
        assert.equal(third.nextMarker, undefined);
    });

    it("starts after the marker's item even when the filter now matches differently", () => {
        const records = many();
        const options = { ...LIST_RULES.vnfInstances, pageSize: 2 };
        const first = queryList(records, {}, options);
        assert.deepEqual(
            queryList(records, { filter: "(gte,metadata/index,1)", nextpage_opaque_marker: first.nextMarker }, options).items.map((item) => item.id),
            ["n2", "n3"],
        );
    });

    describe("refuses markers it did not hand out", () => {
        const options = { ...LIST_RULES.vnfInstances, pageSize: 2 };
        const encoded = (value: unknown) => Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url");

        for (const [what, marker] of [
            ["text that is not base64url", "not a marker!"],
            ["an empty marker", ""],
            ["base64url of something not JSON", encoded("n3")],
            ["JSON without the item", encoded({ last: "n3" })],
            ["JSON whose item is not a string", encoded({ after: 3 })],
            ["JSON that is not an object", encoded(["n3"])],
        ] as const) {
            it(what, () => refuses({ nextpage_opaque_marker: marker }, "nextpage_opaque_marker", /is not a marker this service handed out/, options, many()));
        }

        it("a marker whose item has gone, or that belongs to another list", () => {
            const records = many();
            const { nextMarker } = queryList(records, {}, options);
            assert.ok(nextMarker);
            records.splice(1, 1);
            refuses({ nextpage_opaque_marker: nextMarker }, "nextpage_opaque_marker", /item n1 is no longer in this list/, options, records);
            const occ = queryList([{ id: "o1" }, { id: "o2" }, { id: "o3" }], {}, { ...LIST_RULES.opOccs, pageSize: 2 });
            assert.ok(occ.nextMarker);
            refuses({ nextpage_opaque_marker: occ.nextMarker }, "nextpage_opaque_marker", /item o2 is no longer in this list/, options, many());
        });

        it("a marker given twice", () => {
            const { nextMarker } = queryList(many(), {}, options);
            assert.ok(nextMarker);
            refuses({ nextpage_opaque_marker: [nextMarker, nextMarker] }, "nextpage_opaque_marker", /more than once/, options, many());
        });
    });

    it("needs a page size of at least one", () => {
        for (const pageSize of [0, -1, 1.5, NaN]) {
            assert.throws(() => queryList(many(), {}, { ...LIST_RULES.vnfInstances, pageSize }), RangeError);
        }
    });

    it("needs an id on the items it pages", () => {
        assert.throws(() => queryList([{ name: "a" }, { name: "b" }], {}, { ...LIST_RULES.vnfInstances, pageSize: 1 }), /no string id/);
    });

    describe("the Link header", () => {
        it("keeps the filter and selectors, encoded, and replaces the marker", () => {
            const link = nextPageLink(`${BASE}?nextpage_opaque_marker=old`, { filter: "(eq,vnfProvider,'Other, Inc.')", fields: "a/b", exclude_default: "", nextpage_opaque_marker: "old" }, "new");
            assert.equal(link, `<${BASE}?filter=(eq%2CvnfProvider%2C'Other%2C%20Inc.')&fields=a%2Fb&exclude_default&nextpage_opaque_marker=new>; rel="next"`);
        });

        it("carries any character of a filter through unchanged", () => {
            const filter = "(in,vnfInstanceName,'a&b=c#d+e%20f>g;h?i','x''y',ü)";
            assert.equal(followed(nextPageLink(BASE, { filter }, "m")).filter, filter);
        });

        it("drops parameters that are no query feature", () => {
            const query = { filter: "(eq,a,b)", all_records: "yes" } as ListQuery;
            assert.equal(nextPageLink(BASE, query, "m"), `<${BASE}?filter=(eq%2Ca%2Cb)&nextpage_opaque_marker=m>; rel="next"`);
        });
    });
});
