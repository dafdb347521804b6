/**
 * change_flavour (SOL003 §5.4.7, ChangeVnfFlavourRequest) between the HA flavours: complex ↔ podaffinity
 * moves every node into (or out of) its group's anti-affinity server group, which only a new VM can do, so
 * the nodes are replaced one per stack update (as a heal replaces them): the workers, then the masters in
 * their join order, master-0 last. The stack's `flavourChange` key says which nodes have moved. Other changes
 * are refused with the reason (SOL013 §6.4: 422, a well-formed request this VNF cannot carry out).
 */
import type { VnfSpec } from "../config/spec";
import { conflict, ProblemError } from "./problem";

type Body = Record<string, any>;
type Config = Record<string, unknown>;

const FLAVOURS = ["simple", "complex", "podaffinity"];
const unprocessable = (detail: string) => new ProblemError(422, detail);

/**
 * The stack configs that carry out the change on the VNF whose stack config is `current` (resolved:
 * `spec`): `stages` moving one more node each, then `config`, where every node has the new flavour and no
 * change is under way. A change stopped half way is finished by the same request.
 */
export function planFlavourChange(current: Config, spec: VnfSpec, params: Body): { stages: Config[]; config: Config } {
    const to = String(params.newFlavourId);
    if (spec.kind !== "cluster") throw unprocessable("newFlavourId: a registry VNF has one deployment flavour");
    const stopped = spec.flavourChange;
    if (stopped && to !== spec.flavour) throw conflict(`a change from ${stopped.from} to ${spec.flavour} stopped after ${stopped.moved.length} node(s); send that request again to finish it`);
    const from = stopped?.from ?? spec.flavour;
    if (!stopped && to === from) throw conflict(`the VNF's flavour is already ${from}`);
    if (!FLAVOURS.includes(to)) throw unprocessable(`newFlavourId: ${to} is none of this VNF's deployment flavours (${FLAVOURS.join(", ")})`);
    if (from === "simple" || to === "simple") {
        throw unprocessable(
            `newFlavourId: ${from} → ${to} changes the control plane's endpoint (the master's address ↔ the HA VIP), which is in the API server's certificate and every node's kubeconfig; instantiate a new VNF of flavour ${to} instead`,
        );
    }
    if (params.instantiationLevelId !== undefined) throw new ProblemError(400, "instantiationLevelId: this VNF has no instantiation levels");
    if ((params.extVirtualLinks ?? []).length) throw unprocessable("extVirtualLinks: a flavour change keeps every connection point where it is; move them with change_ext_conn");

    const order = [...Array.from({ length: spec.workers.count }, (_, i) => `worker-${i}`), ...Array.from({ length: spec.masters.count - 1 }, (_, i) => `master-${i + 1}`), "master-0"];
    const alreadyMoved = stopped?.moved ?? [];
    const remaining = order.filter((node) => !alreadyMoved.includes(node));
    // Moving away from podaffinity, the nodes not moved yet stay in the server groups of its policy.
    const fromPolicy = from === "podaffinity" ? spec.serverGroupPolicy : undefined;
    const rest = Object.fromEntries(Object.entries(current).filter(([key]) => key !== "podAffinity" && key !== "flavourChange"));
    const target: Config = { ...rest, flavour: to, ...(to === "podaffinity" && current.podAffinity ? { podAffinity: current.podAffinity } : {}) };
    const change = (moved: string[]) => ({ from, ...(fromPolicy ? { fromServerGroupPolicy: fromPolicy } : {}), moved });
    const stages = remaining.slice(0, -1).map((_, k) => ({ ...target, flavourChange: change([...alreadyMoved, ...remaining.slice(0, k + 1)]) }));
    return { stages, config: target };
}
