/**
 * What the list-query suites (queryFilter, querySelectors, queryPaging) share: three VNF instances to query,
 * list options without paging, and the assertions on which instances a filter selects and on a refused query.
 */
import { strict as assert } from "node:assert";
import { LIST_RULES, ListOptions, ListQuery, ListQueryParameter, QueryError, queryList } from "../../service/query";

export const links = (id: string) => ({ self: { href: `http://vnfm/vnflcm/v1/vnf_instances/${id}` } });

/** Three VNF instances, in creation order, with the attributes the filter and selector tests look at. */
export function instances(): Record<string, unknown>[] {
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

export const unpaged = (rules: (typeof LIST_RULES)[keyof typeof LIST_RULES] = LIST_RULES.vnfInstances): ListOptions => ({ ...rules, pageSize: Infinity });

/** The ids of the instances a filter selects, in order. */
export function selected(filter: string, records = instances()): unknown[] {
    return queryList(records, { filter }, unpaged()).items.map((item) => item.id);
}

/** Asserts that `query` is refused with a 400 whose detail names `parameter` and matches `detail`. */
export function refuses(query: ListQuery, parameter: ListQueryParameter, detail: RegExp, options = unpaged(), records = instances()): void {
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
