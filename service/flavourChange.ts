/**
 * change_flavour (SOL003 §5.4.7, ChangeVnfFlavourRequest) between the HA flavours: complex ↔ podaffinity
 * moves every node into (or out of) its group's anti-affinity server group, which only a new VM can do, so
 * the nodes are replaced one per stack update (as a heal replaces them): the workers, then the masters in
 * their join order, master-0 last. The stack's `flavourChange` key says which nodes have moved. Other changes
 * are refused with the reason (SOL013 §6.4: 422, a well-formed request this VNF cannot carry out).
 */
import { conflict, ProblemError } from "./problem";

type Body = Record<string, any>;
type Config = Record<string, unknown>;

const FLAVOURS = ["simple", "complex", "podaffinity"];
const unprocessable = (detail: string) => new ProblemError(422, detail);

/**
 * The stack configs that carry out the change: `stages` moving one more node each, then `config`, where
 * every node has the new flavour and no change is under way.
 */
export function planFlavourChange(current: Config, params: Body): { stages: Config[]; config: Config } {
    const from = String(current.flavour ?? "simple");
    const to = String(params.newFlavourId);
    if (to === from) throw conflict(`the VNF's flavour is already ${from}`);
    if (!FLAVOURS.includes(to)) throw unprocessable(`newFlavourId: ${to} is none of this VNF's deployment flavours (${FLAVOURS.join(", ")})`);
    if (from === "simple" || to === "simple") {
        throw unprocessable(
            `newFlavourId: ${from} → ${to} changes the control plane's endpoint (the master's address ↔ the HA VIP), which is in the API server's certificate and every node's kubeconfig; instantiate a new VNF of flavour ${to} instead`,
        );
    }
    if (params.instantiationLevelId !== undefined) throw new ProblemError(400, "instantiationLevelId: this VNF has no instantiation levels");
    if ((params.extVirtualLinks ?? []).length) throw unprocessable("extVirtualLinks: a flavour change keeps every connection point where it is; move them with change_ext_conn");
    if (current.flavourChange) throw conflict("a flavour change is already under way in this VNF's stack; retry or roll back its operation");

    const masters = Number((current.masters as Body | undefined)?.count ?? 3);
    const workers = Number((current.workers as Body | undefined)?.count ?? 0);
    const order = [...Array.from({ length: workers }, (_, i) => `worker-${i}`), ...Array.from({ length: masters - 1 }, (_, i) => `master-${i + 1}`), "master-0"];
    const fromPolicy = (current.podAffinity as Body | undefined)?.serverGroupPolicy;
    const { podAffinity, ...rest } = current;
    const target: Config = { ...rest, flavour: to, ...(to === "podaffinity" && podAffinity ? { podAffinity } : {}) };
    const change = (moved: string[]) => ({ from, ...(from === "podaffinity" && fromPolicy ? { fromServerGroupPolicy: fromPolicy } : {}), moved });
    const stages = order.slice(0, -1).map((_, k) => ({ ...target, flavourChange: change(order.slice(0, k + 1)) }));
    return { stages, config: target };
}
