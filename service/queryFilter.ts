/**
 * Attribute-based filtering of a list's records (ETSI GS NFV-SOL 013 v2.6.1 §5.2):
 * filter=(op,attrName,value[,value]*)[;(op,attrName,value[,value]*)]*
 */
import { ItemType, parseAttributeName } from "./queryAttributes";
import { QueryError } from "./queryParameters";

/**
 * The records `filter` selects: those for which every expression holds. Each attribute name must be one of
 * `itemType`'s; a bad filter is a QueryError.
 */
export function parseFilter(filter: string, itemType: ItemType): (record: Record<string, unknown>) => boolean {
    const expressions = parseExpressions(filter, itemType);
    return (record) => expressions.every((expression) => holds(record, expression));
}

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

function parseExpressions(filter: string, itemType: ItemType): FilterExpression[] {
    if (filter === "") throw new QueryError("filter", "is empty");
    const expressions: FilterExpression[] = [];
    for (let at = 0; ; ) {
        const { expression, end } = parseSimpleExpression(filter, at, itemType);
        expressions.push(expression);
        if (end === filter.length) return expressions;
        if (filter[end] !== ";") throw new QueryError("filter", `expected ';' after ${expression.text}, found '${filter.slice(end)}'`);
        at = end + 1;
    }
}

/** Reads the `(op,attrName,value...)` that starts at `start`; `end` is the index just past its ')'. */
function parseSimpleExpression(filter: string, start: number, itemType: ItemType): { expression: FilterExpression; end: number } {
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
    return { expression: { text, operator, path: parseAttributeName("filter", filter.slice(operatorEnd + 1, nameEnd), itemType), values }, end: at + 1 };
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
    if (typeof value !== "object" || value === null || !Object.hasOwn(value, path[0])) return [];
    return valuesAt((value as Record<string, unknown>)[path[0]], path.slice(1));
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

