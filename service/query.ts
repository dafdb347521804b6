/**
 * ETSI GS NFV-SOL 013 v2.6.1 query features of list resources (GET /vnf_instances, /vnf_lcm_op_occs,
 * /subscriptions): attribute-based filtering (§5.2, ./queryFilter), attribute selectors (§5.3) and paging
 * (§5.4.2), as pure functions over the records of one list.
 *
 * Query parameter values are taken as fastify hands them over: already URL-decoded.
 */
import { ITEM_TYPES, ItemType, parseAttributeName } from "./queryAttributes";
import { parseFilter } from "./queryFilter";
import { ListQuery, ListQueryParameter, QueryError } from "./queryParameters";

export { QueryError } from "./queryParameters";
export type { ListQuery, ListQueryParameter } from "./queryParameters";

/** What a list resource supports, per SOL003 v2.6.1. */
export interface ListRules {
    /** The data type of the items: the attribute names filter, fields and exclude_fields may use. */
    readonly itemType: ItemType;
    /** The "default exclude set" (SOL013 §5.3.2): top-level attributes left out unless asked for. */
    readonly defaultExcluded: readonly string[];
    /**
     * Top-level attributes no selector leaves out, of minimum cardinality one: SOL013 table 5.3.2-2 lets
     * selectors leave out only complex attributes of minimum cardinality zero. exclude_fields naming one is a 400.
     */
    readonly alwaysKept: readonly string[];
    /** Whether the resource takes all_fields, fields, exclude_fields and exclude_default at all. */
    readonly attributeSelectors: boolean;
}

const ID_AND_LINKS = ["id", "_links"];

export const LIST_RULES = {
    /** SOL003 v2.6.1 §5.4.2.3.2, table 5.4.2.3.2-1 (exclude_default of GET /vnf_instances). */
    vnfInstances: {
        itemType: ITEM_TYPES.vnfInstance,
        defaultExcluded: ["vnfConfigurableProperties", "vimConnectionInfo", "instantiatedVnfInfo", "metadata", "extensions"],
        alwaysKept: ID_AND_LINKS,
        attributeSelectors: true,
    },
    /**
     * SOL003 v2.6.1 §5.4.12.3.2, table 5.4.12.3.2-1 (exclude_default of GET /vnf_lcm_op_occs). The table names
     * operationParams, but VnfLcmOpOcc.operationParams has cardinality 1 (§5.5.2.13, table 5.5.2.13-1), so by
     * SOL013 table 5.3.2-2 it stays and a listed occurrence has every mandatory attribute. Tacker's v1 API
     * (views/vnf_lcm_op_occs.py) leaves it out of a list without selectors.
     */
    opOccs: {
        itemType: ITEM_TYPES.vnfLcmOpOcc,
        defaultExcluded: ["operationParams", "error", "resourceChanges", "changedInfo", "changedExtConnectivity"],
        alwaysKept: [...ID_AND_LINKS, "operationParams"],
        attributeSelectors: true,
    },
    /** SOL003 v2.6.1 §5.4.18.3.2: GET /subscriptions takes only filter and nextpage_opaque_marker. */
    subscriptions: { itemType: ITEM_TYPES.lccnSubscription, defaultExcluded: [], alwaysKept: ID_AND_LINKS, attributeSelectors: false },
} as const satisfies Record<string, ListRules>;

export interface ListOptions extends ListRules {
    /** Most items in one response; Infinity turns paging off. */
    readonly pageSize: number;
}

export interface ListPage {
    readonly items: Record<string, unknown>[];
    /** Present when more items match: the value of nextpage_opaque_marker for the next page. */
    readonly nextMarker?: string;
}

/**
 * Answers a GET on a list resource: applies the filter, then paging, then the attribute selectors.
 * `records` must come in a stable order (by creation) and each carry a string `id`; pass them as the
 * client may see them (secrets masked, internal attributes gone), since a filter can probe any attribute.
 * Every parameter is checked before any record is looked at, so a bad query fails even on an empty list.
 */
export function queryList(records: readonly Record<string, unknown>[], query: ListQuery, options: ListOptions): ListPage {
    if (!(options.pageSize >= 1 && (Number.isInteger(options.pageSize) || options.pageSize === Infinity))) {
        throw new RangeError(`pageSize must be a positive integer or Infinity, not ${options.pageSize}`);
    }
    const filterText = single(query, "filter");
    const matches = filterText === undefined ? () => true : parseFilter(filterText, options.itemType);
    const select = parseSelectors(query, options);
    const markerText = single(query, "nextpage_opaque_marker");
    const start = markerText === undefined ? 0 : positionAfter(records, decodeMarker(markerText));

    const page: Record<string, unknown>[] = [];
    for (let i = start; i < records.length; i++) {
        if (!matches(records[i])) continue;
        if (page.length === options.pageSize) return { items: page.map(select), nextMarker: encodeMarker(idOf(page[page.length - 1])) };
        page.push(records[i]);
    }
    return { items: page.map(select) };
}

/**
 * The Link header for the next page (SOL013 §5.4.2.3): the same filter and selectors as `query`, with
 * nextpage_opaque_marker set to `nextMarker`. `baseUrl` is the list's URL; any query string on it is dropped.
 */
export function nextPageLink(baseUrl: string, query: ListQuery, nextMarker: string): string {
    const kept = KEPT_IN_NEXT_LINK.flatMap((name) => {
        const value = query[name];
        return typeof value === "string" ? [queryPart(name, value)] : [];
    });
    const parts = [...kept, queryPart("nextpage_opaque_marker", nextMarker)];
    return `<${baseUrl.split("?")[0]}?${parts.join("&")}>; rel="next"`;
}

const KEPT_IN_NEXT_LINK = ["filter", "all_fields", "fields", "exclude_fields", "exclude_default"] as const;
const FLAGS: readonly ListQueryParameter[] = ["all_fields", "exclude_default"];

function queryPart(name: ListQueryParameter, value: string): string {
    return FLAGS.includes(name) ? name : `${name}=${encodeURIComponent(value)}`;
}

function single(query: ListQuery, name: ListQueryParameter): string | undefined {
    const value = query[name];
    if (value === undefined || typeof value === "string") return value;
    throw new QueryError(name, "is given more than once");
}

// ---------------------------------------------------------------------------------------------------------------
// Attribute selectors (SOL013 §5.3, table 5.3.2-2 for the combinations)

/** A set of attribute paths as a tree: `true` marks a whole attribute, a subtree only some of its parts. */
type PathTree = Map<string, PathTree | true>;

type Select = (record: Record<string, unknown>) => Record<string, unknown>;

function parseSelectors(query: ListQuery, rules: ListRules): Select {
    const allFields = flag(query, "all_fields");
    const excludeDefault = flag(query, "exclude_default");
    const fields = single(query, "fields");
    const excludeFields = single(query, "exclude_fields");
    const given = (["all_fields", "fields", "exclude_fields", "exclude_default"] as const).filter((name) => query[name] !== undefined);

    if (given.length > 0 && !rules.attributeSelectors) throw new QueryError(given[0], "this resource takes no attribute selectors");
    if (allFields && given.length > 1) throw new QueryError("all_fields", `cannot be combined with ${given.slice(1).join(", ")}`);
    if (fields !== undefined && excludeFields !== undefined) throw new QueryError("fields", "cannot be combined with exclude_fields");
    if (excludeFields !== undefined && excludeDefault) throw new QueryError("exclude_fields", "cannot be combined with exclude_default");

    if (allFields) return (record) => record;
    const kept = rules.alwaysKept;
    if (fields !== undefined) {
        const listed = pathTree(parseList("fields", fields, rules.itemType));
        const optional = excludeDefault ? (name: string) => rules.defaultExcluded.includes(name) : (_: string, value: unknown) => isComplex(value);
        return (record) => keepListed(record, listed, (name, value) => !kept.includes(name) && optional(name, value)) as Record<string, unknown>;
    }
    if (excludeFields !== undefined) {
        const paths = parseList("exclude_fields", excludeFields, rules.itemType);
        const mandatory = paths.find((path) => kept.includes(path[0]));
        if (mandatory) throw new QueryError("exclude_fields", `${mandatory.join("/")} cannot be excluded: ${kept.join(", ")} are always returned`);
        const excluded = pathTree(paths);
        return (record) => withoutPaths(record, excluded) as Record<string, unknown>;
    }
    const defaults = pathTree(rules.defaultExcluded.filter((name) => !kept.includes(name)).map((name) => [name]));
    return (record) => withoutPaths(record, defaults) as Record<string, unknown>;
}

/** all_fields and exclude_default are flags: present or not, with no value (SOL013 §5.3.2). */
function flag(query: ListQuery, name: "all_fields" | "exclude_default"): boolean {
    const value = single(query, name);
    if (value !== undefined && value !== "") throw new QueryError(name, `is a flag and takes no value, not '${value}'`);
    return value !== undefined;
}

function parseList(parameter: "fields" | "exclude_fields", list: string, itemType: ItemType): string[][] {
    if (list === "") throw new QueryError(parameter, "names no attribute");
    return list.split(",").map((name) => parseAttributeName(parameter, name, itemType));
}

function pathTree(paths: readonly (readonly string[])[]): PathTree {
    const tree: PathTree = new Map();
    for (const path of paths) addPath(tree, path);
    return tree;
}

function addPath(tree: PathTree, [head, ...rest]: readonly string[]): void {
    if (rest.length === 0) {
        tree.set(head, true);
        return;
    }
    const child = tree.get(head) ?? new Map();
    if (child === true) return;
    tree.set(head, child);
    addPath(child, rest);
}

/** `value` without the attributes in `excluded`, applied to every element where the path crosses an array. */
function withoutPaths(value: unknown, excluded: PathTree): unknown {
    if (Array.isArray(value)) return value.map((element) => withoutPaths(element, excluded));
    if (!isObject(value)) return value;
    const result = { ...value };
    for (const [name, part] of excluded) {
        if (!Object.hasOwn(result, name)) continue;
        if (part === true) delete result[name];
        else result[name] = withoutPaths(result[name], part);
    }
    return result;
}

/**
 * `value` with its optional attributes dropped unless listed: a listed attribute is kept whole, a partly listed
 * one (a/b) keeps its simple attributes and its listed structured ones (SOL013 table 5.3.2-2, applied at each level).
 */
function keepListed(value: unknown, listed: PathTree, optional: (name: string, value: unknown) => boolean): unknown {
    if (Array.isArray(value)) return value.map((element) => keepListed(element, listed, optional));
    if (!isObject(value)) return value;
    const result: Record<string, unknown> = {};
    for (const [name, attribute] of Object.entries(value)) {
        const wanted = listed.get(name);
        if (wanted === true || !optional(name, attribute)) result[name] = attribute;
        else if (wanted) result[name] = keepListed(attribute, wanted, (_, inner) => isComplex(inner));
    }
    return result;
}

/** A structured attribute (object or array): the only kind selectors leave out (SOL013 §5.3.2 "complex attributes"). */
function isComplex(value: unknown): boolean {
    return typeof value === "object" && value !== null;
}

function isObject(value: unknown): value is Record<string, unknown> {
    return typeof value === "object" && value !== null && !Array.isArray(value);
}

// ---------------------------------------------------------------------------------------------------------------
// Paging (SOL013 §5.4.2.1, alternative 2): the marker names the last item returned, so a page starts right after it whatever
// was created since or how the filter's matches changed. It is base64url JSON so that clients do not build it.

function encodeMarker(lastId: string): string {
    return Buffer.from(JSON.stringify({ after: lastId })).toString("base64url");
}

function decodeMarker(marker: string): string {
    const foreign = new QueryError("nextpage_opaque_marker", "is not a marker this service handed out");
    if (!/^[A-Za-z0-9_-]+$/.test(marker)) throw foreign;
    let decoded: unknown;
    try {
        decoded = JSON.parse(Buffer.from(marker, "base64url").toString("utf8"));
    } catch {
        throw foreign;
    }
    if (!isObject(decoded) || typeof decoded.after !== "string") throw foreign;
    return decoded.after;
}

/** Where the next page starts: just after the item the marker names. */
function positionAfter(records: readonly Record<string, unknown>[], lastId: string): number {
    const index = records.findIndex((record) => record.id === lastId);
    if (index < 0) {
        throw new QueryError("nextpage_opaque_marker", `its item ${lastId} is no longer in this list (deleted?); list again from the first page`);
    }
    return index + 1;
}

function idOf(record: Record<string, unknown>): string {
    if (typeof record.id !== "string") throw new Error("queryList: a paged record has no string id");
    return record.id;
}
