/**
 * SOL013 §5.2 attribute-based filtering of list queries (service/queryFilter.ts): each operator, attribute paths
 * into structures and arrays, ';'-joined expressions, quoted values, and the 400s a malformed filter gets.
 */
import { strict as assert } from "node:assert";
import { ProblemError } from "../service/problem";
import { LIST_RULES, queryList } from "../service/query";
import { instances, refuses, selected, unpaged } from "./support/queryFixtures";

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
