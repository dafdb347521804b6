/**
 * ETSI GS NFV-SOL 013 v2.6.1 query features of list resources (GET /vnf_instances, /vnf_lcm_op_occs,
 * /subscriptions): attribute-based filtering (§5.2), attribute selectors (§5.3) and paging (§5.4.2),
 * as pure functions over the records of one list.
 *
 * Query parameter values are taken as fastify hands them over: already URL-decoded.
 */
import { ProblemError } from "./problem";

/** The URI query parameters of a list resource. A parameter given twice arrives as an array and is refused. */
export type ListQuery = { readonly [P in ListQueryParameter]?: string | readonly string[] };
export type ListQueryParameter = "filter" | "all_fields" | "fields" | "exclude_fields" | "exclude_default" | "nextpage_opaque_marker";

/** A bad query parameter: 400, with a detail that names the parameter and what is wrong with it. */
export class QueryError extends ProblemError {
    constructor(
        readonly parameter: ListQueryParameter,
        problem: string,
    ) {
        super(400, `${parameter}: ${problem}`);
        this.name = "QueryError";
    }
}

/** What a list resource supports, per SOL003 v2.6.1. */
export interface ListRules {
    /** The "default exclude set" (SOL013 §5.3.2): top-level attributes left out unless asked for. */
    readonly defaultExcluded: readonly string[];
    /** Whether the resource takes all_fields, fields, exclude_fields and exclude_default at all. */
    readonly attributeSelectors: boolean;
}

export const LIST_RULES = {
    /** SOL003 v2.6.1 §5.4.2.3.2, table 5.4.2.3.2-1 (exclude_default of GET /vnf_instances). */
    vnfInstances: { defaultExcluded: ["vimConnectionInfo", "instantiatedVnfInfo", "metadata", "extensions"], attributeSelectors: true },
    /** SOL003 v2.6.1 §5.4.12.3.2, table 5.4.12.3.2-1 (exclude_default of GET /vnf_lcm_op_occs). */
    opOccs: {
        defaultExcluded: ["operationParams", "error", "resourceChanges", "changedInfo", "changedExtConnectivity"],
        attributeSelectors: true,
    },
    /** SOL003 v2.6.1 §5.4.18.3.2: GET /subscriptions takes only filter and nextpage_opaque_marker. */
    subscriptions: { defaultExcluded: [], attributeSelectors: false },
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
    const filter = filterText === undefined ? [] : parseFilter(filterText);
    const select = parseSelectors(query, options);
    const markerText = single(query, "nextpage_opaque_marker");
    const start = markerText === undefined ? 0 : positionAfter(records, decodeMarker(markerText));

    const page: Record<string, unknown>[] = [];
    for (let i = start; i < records.length; i++) {
        if (!filter.every((expression) => holds(records[i], expression))) continue;
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
// Attribute-based filtering (SOL013 §5.2): filter=(op,attrName,value[,value]*)[;(op,attrName,value[,value]*)]*

const SINGLE_VALUE_OPERATORS = ["eq", "neq", "gt", "gte", "lt", "lte"] as const;
const MULTI_VALUE_OPERATORS = ["in", "nin", "cont", "ncont"] as const;
const OPERATORS: readonly string[] = [...SINGLE_VALUE_OPERATORS, ...MULTI_VALUE_OPERATORS];
type Operator = (typeof SINGLE_VALUE_OPERATORS)[number] | (typeof MULTI_VALUE_OPERATORS)[number];
type PositiveOperator = Exclude<Operator, "neq" | "nin" | "ncont">;

interface FilterExpression {
    readonly text: string;
    readonly operator: Operator;
    readonly path: readonly string[];
    readonly values: readonly string[];
}

function parseFilter(filter: string): FilterExpression[] {
    if (filter === "") throw new QueryError("filter", "is empty");
    const expressions: FilterExpression[] = [];
    for (let at = 0; ; ) {
        const { expression, end } = parseSimpleExpression(filter, at);
        expressions.push(expression);
        if (end === filter.length) return expressions;
        if (filter[end] !== ";") throw new QueryError("filter", `expected ';' after ${expression.text}, found '${filter.slice(end)}'`);
        at = end + 1;
    }
}

/** Reads the `(op,attrName,value...)` that starts at `start`; `end` is the index just past its ')'. */
function parseSimpleExpression(filter: string, start: number): { expression: FilterExpression; end: number } {
    const malformed = (what: string) => new QueryError("filter", `${what} in '${filter.slice(start)}'; expected (op,attrName,value[,value]*)`);
    if (filter[start] !== "(") throw malformed("missing '('");
    const operatorEnd = indexOfAny(filter, ",)", start);
    if (operatorEnd < 0 || filter[operatorEnd] === ")") throw malformed("no attribute name");
    const nameEnd = indexOfAny(filter, ",)", operatorEnd + 1);
    if (nameEnd < 0) throw malformed("missing ')'");
    if (filter[nameEnd] === ")") throw malformed("no value");
    const values: string[] = [];
    let at = nameEnd;
    while (filter[at] === ",") {
        const value = readValue(filter, at + 1, malformed);
        values.push(value.text);
        at = value.end;
    }
    if (filter[at] !== ")") throw malformed(at < filter.length ? `'${filter[at]}' after a value` : "missing ')'");
    const text = filter.slice(start, at + 1);
    const operator = filter.slice(start + 1, operatorEnd);
    if (!isOperator(operator)) throw new QueryError("filter", `unknown operator '${operator}' in ${text}; known: ${OPERATORS.join(", ")}`);
    if (values.length > 1 && (SINGLE_VALUE_OPERATORS as readonly string[]).includes(operator)) {
        throw new QueryError("filter", `${operator} takes one value, ${text} has ${values.length}`);
    }
    return { expression: { text, operator, path: parsePath("filter", filter.slice(operatorEnd + 1, nameEnd)), values }, end: at + 1 };
}

/**
 * Reads one value at `start`: either plain (no ',', ')' or quote) or in single quotes, where '' stands for one
 * quote (SOL013 §5.2.2). `end` is the index of the ',' or ')' after it.
 */
function readValue(filter: string, start: number, malformed: (what: string) => QueryError): { text: string; end: number } {
    if (filter[start] !== "'") {
        const found = indexOfAny(filter, ",)", start);
        const end = found < 0 ? filter.length : found;
        const text = filter.slice(start, end);
        if (text === "") throw malformed("an empty value (write '' for the empty string)");
        if (text.includes("'")) throw malformed(`value ${text} has a quote, so it must be quoted as '${text.replace(/'/g, "''")}'`);
        return { text, end };
    }
    let text = "";
    for (let i = start + 1; i < filter.length; i++) {
        if (filter[i] !== "'") text += filter[i];
        else if (filter[i + 1] === "'") text += filter[i++];
        else return { text, end: i + 1 };
    }
    throw malformed("an unterminated quoted value");
}

function indexOfAny(text: string, characters: string, from: number): number {
    for (let i = from; i < text.length; i++) if (characters.includes(text[i])) return i;
    return -1;
}

function isOperator(name: string): name is Operator {
    return OPERATORS.includes(name);
}

/** An attribute name: attribute names joined by '/', each descending into a structured attribute. */
function parsePath(parameter: ListQueryParameter, name: string): string[] {
    const path = name.split("/");
    if (path.some((segment) => segment === "")) throw new QueryError(parameter, `'${name}' is not an attribute name (an empty part between '/')`);
    return path;
}

/** Each negative operator holds exactly when its positive counterpart does not. */
const NEGATIONS: Partial<Record<Operator, PositiveOperator>> = { neq: "eq", nin: "in", ncont: "cont" };

const MATCHERS: Record<PositiveOperator, (attribute: unknown, values: readonly string[]) => boolean> = {
    eq: (attribute, [value]) => equals(attribute, value),
    in: (attribute, values) => values.some((value) => equals(attribute, value)),
    cont: (attribute, values) => typeof attribute === "string" && values.some((value) => attribute.includes(value)),
    gt: (attribute, [value]) => (order(attribute, value) ?? NaN) > 0,
    gte: (attribute, [value]) => (order(attribute, value) ?? NaN) >= 0,
    lt: (attribute, [value]) => (order(attribute, value) ?? NaN) < 0,
    lte: (attribute, [value]) => (order(attribute, value) ?? NaN) <= 0,
};

/**
 * Whether `record` passes one expression. The attribute's values are every value its path reaches: where the
 * path crosses an array, each element counts, so eq, in, cont, gt... hold when any of them matches. neq, nin
 * and ncont are their exact negations: they hold when none matches, including when the attribute is absent.
 * A value that does not read as the attribute's type (abc for a number) matches nothing.
 * Each expression is judged on its own: two expressions on one array need not match the same element.
 */
function holds(record: Record<string, unknown>, expression: FilterExpression): boolean {
    const negated = NEGATIONS[expression.operator];
    const matches = MATCHERS[negated ?? (expression.operator as PositiveOperator)];
    const anyMatch = valuesAt(record, expression.path).some((attribute) => matches(attribute, expression.values));
    return negated ? !anyMatch : anyMatch;
}

/** The values `path` reaches in `value`, arrays flattened; absent and null attributes reach nothing. */
function valuesAt(value: unknown, path: readonly string[]): unknown[] {
    if (Array.isArray(value)) return value.flatMap((element) => valuesAt(element, path));
    if (path.length === 0) return value === null || value === undefined ? [] : [value];
    if (!isObject(value) || !Object.hasOwn(value, path[0])) return [];
    return valuesAt(value[path[0]], path.slice(1));
}

/** An attribute value against a filter value: numbers as numbers, booleans as true/false, date-times as instants, else text. */
function equals(attribute: unknown, value: string): boolean {
    if (typeof attribute === "boolean") return String(attribute) === value;
    return order(attribute, value) === 0;
}

/** Negative, zero or positive as `attribute` sorts before, with or after `value`; undefined when they do not compare. */
function order(attribute: unknown, value: string): number | undefined {
    if (typeof attribute === "number") {
        const number = parseNumber(value);
        return number === undefined ? undefined : Math.sign(attribute - number);
    }
    if (typeof attribute !== "string") return undefined;
    if (isDateTime(attribute) && isDateTime(value)) return Math.sign(Date.parse(attribute) - Date.parse(value));
    return attribute < value ? -1 : attribute > value ? 1 : 0;
}

function parseNumber(text: string): number | undefined {
    return /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(text) ? Number(text) : undefined;
}

/** RFC 3339 date-time, as SOL013 DateTime attributes (startTime, stateEnteredTime...) are written. */
function isDateTime(text: string): boolean {
    return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(text) && !Number.isNaN(Date.parse(text));
}

// ---------------------------------------------------------------------------------------------------------------
// Attribute selectors (SOL013 §5.3, table 5.3.2-2 for the combinations)

/** Attributes every representation keeps, whatever the selectors: they are mandatory in all three resources. */
const ALWAYS_KEPT: readonly string[] = ["id", "_links"];

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
    if (fields !== undefined) {
        const listed = pathTree(parseList("fields", fields));
        const optional = excludeDefault ? (name: string) => rules.defaultExcluded.includes(name) : (_: string, value: unknown) => isComplex(value);
        return (record) => keepListed(record, listed, (name, value) => !ALWAYS_KEPT.includes(name) && optional(name, value)) as Record<string, unknown>;
    }
    if (excludeFields !== undefined) {
        const paths = parseList("exclude_fields", excludeFields);
        const mandatory = paths.find((path) => ALWAYS_KEPT.includes(path[0]));
        if (mandatory) throw new QueryError("exclude_fields", `${mandatory.join("/")} cannot be excluded: ${ALWAYS_KEPT.join(" and ")} are always returned`);
        const excluded = pathTree(paths);
        return (record) => withoutPaths(record, excluded) as Record<string, unknown>;
    }
    const defaults = pathTree(rules.defaultExcluded.map((name) => [name]));
    return (record) => withoutPaths(record, defaults) as Record<string, unknown>;
}

/** all_fields and exclude_default are flags: present or not, with no value (SOL013 §5.3.2). */
function flag(query: ListQuery, name: "all_fields" | "exclude_default"): boolean {
    const value = single(query, name);
    if (value !== undefined && value !== "") throw new QueryError(name, `is a flag and takes no value, not '${value}'`);
    return value !== undefined;
}

function parseList(parameter: "fields" | "exclude_fields", list: string): string[][] {
    if (list === "") throw new QueryError(parameter, "names no attribute");
    return list.split(",").map((name) => parsePath(parameter, name));
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
