/**
 * SOL013 §5.4.2 paging of list queries: pages followed through the Link header with the filter and selectors
 * kept, markers that survive records created meanwhile, and the 400s for markers this service did not hand out.
 */
import { strict as assert } from "node:assert";
import { LIST_RULES, ListQuery, nextPageLink, queryList } from "../service/query";
import { links, refuses } from "./support/queryFixtures";

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
