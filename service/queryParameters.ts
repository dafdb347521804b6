/**
 * The URI query parameters of a list resource (ETSI GS NFV-SOL 013 v2.6.1 §5.2–5.4), and the 400 a bad one gets.
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
