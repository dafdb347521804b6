/**
 * The pattern every remote step follows: a step definition (what to do on create/update/delete/read, which
 * inputs force a replacement) turned into a Pulumi dynamic provider with the contract the engine expects:
 *
 * - check: validates inputs, tolerating values still unknown during preview;
 * - diff: replaces when the host or a `replaceOn` input changes (or is unknown), updates otherwise;
 *   `providerVersion` changes update, so fixed delete code reaches existing resources;
 * - create/update: return every input plus computed values (diff later gets these as "olds");
 * - delete: undoes create; read: reports drift for `pulumi refresh`, or an empty id when the thing is gone.
 *
 * The provider is serialized into the stack state by the SDK: this module imports only node built-ins and
 * the transport, and never holds a connection between calls.
 */
import { ConnectError, HostKeyMismatchError, SshPolicy, SshSession, SshTarget, withSession } from "./transport/ssh";

/** Sessions to other hosts than the step's own (e.g. a control-plane node), opened and closed per use. */
export interface Hosts {
    /** Runs `fn` in a session to `target`, with the step's log prefix and policy (overridable). */
    on<T>(target: SshTarget, fn: (s: SshSession) => Promise<T>, policy?: Partial<SshPolicy>): Promise<T>;
    /**
     * Runs `fn` on the first of `targets` that accepts a login (a short connect policy each, in order) and
     * passes `usable`, so one dead or reset control-plane node does not stop the step. `what` names the
     * targets in the error.
     */
    first<T>(targets: SshTarget[], what: string, fn: (s: SshSession, index: number) => Promise<T>, usable?: (s: SshSession) => Promise<boolean>): Promise<T>;
}

/** What `pulumi.runtime.unknownValue` is: the engine's placeholder for values not known during preview. */
const UNKNOWN_VALUE = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";
// Provider code refers to module-local names only: TypeScript compiles uses of an exported const as
// `exports.X`, which the SDK's serializer does not carry into the stack state.
export { UNKNOWN_VALUE as UNKNOWN };

export type StepInputs = Record<string, unknown>;

/** The properties every step resource has besides its own inputs. */
export interface StepEnvelope {
    /** How to log into the host (secret). */
    connection: SshTarget;
    /** Version of the step's code; a change makes existing resources update and store the new code. */
    providerVersion: string;
    /** Host key seen at create (trust on first use), enforced afterwards. */
    hostKeyFingerprint?: string;
}

export type Failure = { property: string; reason: string };

export interface StepDefinition<I extends StepInputs, C extends StepInputs = StepInputs> {
    /** Resource type name, e.g. `ManagedLine` (`pulumi-nodejs:dynamic/k8s-vnf:ManagedLine`). */
    kind: string;
    /** Version of this step's code. */
    version: string;
    /** Problems with the step's own inputs (connection excluded); unknown values are never passed here. */
    validate(inputs: Partial<I>): Failure[];
    /**
     * The values create/update/read compute besides the inputs. The SDK gives a resource an Output only for
     * the keys it registered (`transferProperties` in sdk/nodejs/runtime/rpc.ts), so each is registered.
     */
    outputs: ReadonlyArray<keyof C & string>;
    /** Inputs whose change cannot be applied in place. */
    replaceOn: ReadonlyArray<keyof I & string>;
    /** When the old and new copy cannot exist together. */
    deleteBeforeReplace: boolean;
    /** When the host cannot be reached at delete: `true` treats the thing as gone with its host. */
    deleteSucceedsWhenUnreachable: boolean;
    /**
     * `false` for steps that work only through `hosts` (e.g. kubectl on whichever control-plane node
     * answers): no session to `connection` is opened, which then only identifies the resource.
     */
    ownHost?: boolean;
    /** Connection retry and command deadline overrides. */
    policy?: Partial<SshPolicy>;
    /** The resource id (stable for the same target). */
    id(inputs: I & StepEnvelope): string;
    create(session: SshSession, inputs: I & StepEnvelope, hosts: Hosts): Promise<C>;
    update(session: SshSession, olds: I & C & StepEnvelope, news: I & StepEnvelope, hosts: Hosts): Promise<C>;
    delete(session: SshSession, outs: I & C & StepEnvelope, hosts: Hosts): Promise<void>;
    /**
     * Replaces `delete` for steps whose undoing happens elsewhere first (a drain on a control-plane node)
     * and must not depend on the step's own host answering.
     */
    deleteAcross?(hosts: Hosts, outs: I & C & StepEnvelope): Promise<void>;
    /** The inputs (and computed values) as found on the host, or undefined when the thing is gone. */
    read(session: SshSession, outs: I & C & StepEnvelope, hosts: Hosts): Promise<Partial<I & C> | undefined>;
    /** Whether refreshed state shows drift that an update repairs although the inputs did not change. */
    drifted?(outs: I & C): boolean;
}

/**
 * At delete, runs `fn` on a step's host if it still answers as the machine it was (the key pinned in its
 * connection, else the one recorded at create). A host that is gone, or another machine at its address (a new
 * VM), has nothing of the step left to undo: logged under `label` with what was `skipped`, not an error.
 * `what` names the host in a failure of `fn`.
 */
export async function onSameMachine(
    hosts: Hosts,
    step: { connection: SshTarget; hostKeyFingerprint?: string },
    names: { label: string; what: string; skipped: string },
    fn: (s: SshSession) => Promise<unknown>,
): Promise<void> {
    const target = { ...step.connection, hostKeyFingerprint: step.connection.hostKeyFingerprint ?? step.hostKeyFingerprint };
    await hosts.first([target], names.what, fn).catch((e) => {
        if (e instanceof HostKeyMismatchError) console.log(`[${names.label}] another machine answers at its address (a new VM); ${names.skipped}`);
        else if (e instanceof ConnectError) console.log(`[${names.label}] host unreachable; ${names.skipped}`);
        else throw e;
    });
}

/** Connect policy for trying one of several hosts: give up quickly and move to the next. */
const PEER_POLICY: Partial<SshPolicy> = { connectAttempts: 2, connectIntervalMs: 2_000, connectDeadlineMs: 20_000, handshakeTimeoutMs: 10_000 };

const isUnknown = (v: unknown) => v === UNKNOWN_VALUE;

function containsUnknown(v: unknown): boolean {
    if (isUnknown(v)) return true;
    if (Array.isArray(v)) return v.some(containsUnknown);
    if (v && typeof v === "object") return Object.values(v).some(containsUnknown);
    return false;
}

/** Without undefined values, which the engine's protobuf Struct cannot carry ("Unexpected struct type"). */
function defined(props: Record<string, unknown>): Record<string, unknown> {
    return Object.fromEntries(Object.entries(props).filter(([, v]) => v !== undefined));
}

function same(a: unknown, b: unknown): boolean {
    return JSON.stringify(a) === JSON.stringify(b);
}

const CONNECTION_IDENTITY = ["host", "port", "username"] as const;

export function checkConnection(connection: unknown): Failure[] {
    if (isUnknown(connection)) return [];
    if (!connection || typeof connection !== "object") return [{ property: "connection", reason: "required: {host, username, privateKey or password}" }];
    const c = connection as Partial<SshTarget>;
    const failures: Failure[] = [];
    if (!isUnknown(c.host) && (typeof c.host !== "string" || !/^[A-Za-z0-9.:-]+$/.test(c.host))) failures.push({ property: "connection.host", reason: "must be a hostname or an IP address" });
    if (!isUnknown(c.username) && (typeof c.username !== "string" || !/^[A-Za-z_][A-Za-z0-9._-]{0,31}$/.test(c.username))) failures.push({ property: "connection.username", reason: "must be a login name" });
    if (c.port !== undefined && !isUnknown(c.port) && !(Number.isInteger(c.port) && c.port >= 1 && c.port <= 65535)) failures.push({ property: "connection.port", reason: "must be a port from 1 to 65535" });
    if (c.privateKey === undefined && c.password === undefined) failures.push({ property: "connection", reason: "needs a privateKey or a password" });
    return failures;
}

type Action = { when?: unknown; action?: unknown; digest?: unknown; onChange?: unknown };

/** The actions of a `remoteActions` input (remoteActions.ts) that run in `phase`. */
function actionsIn(actions: unknown, phase: string): Action[] {
    return Array.isArray(actions) ? actions.filter((a: Action) => typeof a?.when === "string" && a.when.split(", ").includes(phase)) : [];
}

function listed(actions: Action[]): string {
    return actions.length ? actions.map((a) => String(a.action)).join("; ") : "nothing remote";
}

/**
 * What a change runs, in one line: a replacement's delete and create actions in the order the engine runs
 * them; an update's actions but those that run only when their digest changed and it did not. A state made
 * before steps recorded their plans has no actions to name.
 */
function actionSummary(olds: unknown, news: unknown, replaces: string[], deleteFirst: boolean): string {
    const recorded = Array.isArray(olds);
    if (replaces.length) {
        const del = `delete: ${recorded ? listed(actionsIn(olds, "delete")) : "its actions (not recorded in this older state)"}`;
        const create = `create: ${listed(actionsIn(news, "create"))}`;
        return `will replace (${replaces.join(", ")}): ${deleteFirst ? `${del}, then ${create}` : `${create}, then ${del}`}`;
    }
    const before = actionsIn(olds, "update");
    const runs = actionsIn(news, "update").filter((a) => !a.onChange || !recorded || !before.some((b) => b.action === a.action && b.digest === a.digest));
    return `will update: ${listed(runs)}`;
}

/** The session a step without its own host gets: any use is a bug in the step. */
function noSession(kind: string): SshSession {
    return new Proxy({} as SshSession, {
        get(_target, property) {
            if (property === "hostKeyFingerprint" || property === "then") return undefined;
            throw new Error(`${kind} works through other hosts only; it has no session of its own (used ${String(property)})`);
        },
    });
}

/** A dynamic provider built from a step definition; create one per step kind, at module scope. */
export class StepProvider<I extends StepInputs, C extends StepInputs = StepInputs> {
    constructor(private readonly def: StepDefinition<I, C>) {}

    async check(_olds: Record<string, unknown>, news: Record<string, unknown>) {
        const own: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(news)) if (k !== "connection" && k !== "providerVersion" && k !== "__provider" && !containsUnknown(v)) own[k] = v;
        const failures = [...checkConnection(news.connection), ...this.def.validate(own as Partial<I>).filter((f) => !containsUnknown(news[f.property.split(/[.[]/)[0]]))];
        return { inputs: news, failures };
    }

    async diff(id: string, olds: Record<string, unknown>, news: Record<string, unknown>) {
        const replaces = this.replacesOf(olds, news);
        // Only the inputs count: the olds also hold computed outputs (e.g. hostKeyFingerprint). An input given
        // before and left out now (a proxy or a login removed from config) is a change too. The plan of remote
        // actions is for display: it changes only with the inputs it is made from, or with code, which
        // `providerVersion` brings (a state made before plans were recorded is not updated for it).
        const computed = new Set<string>([...this.def.outputs, "hostKeyFingerprint", "__provider", "remoteActions"]);
        const inputs = new Set([...Object.keys(news), ...Object.keys(olds)].filter((k) => !computed.has(k)));
        const changed = [...inputs].some((k) => !same(olds[k], news[k]));
        const drifted = this.def.drifted?.(olds as I & C) ?? false;
        const changes = changed || drifted || replaces.length > 0;
        // The CLI shows a dynamic provider's console output (v3.146+): one line of what the change runs.
        if (changes) console.log(`[${this.def.kind} ${id}] ${actionSummary(olds.remoteActions, news.remoteActions, replaces, this.def.deleteBeforeReplace)}`);
        return { changes, replaces, deleteBeforeReplace: this.def.deleteBeforeReplace };
    }

    /** The inputs whose change replaces the resource: the host's identity, `replaceOn`, any still unknown. */
    protected replacesOf(olds: Record<string, unknown>, news: Record<string, unknown>): string[] {
        const replaces: string[] = [];
        const oldConn = (olds.connection ?? {}) as Record<string, unknown>;
        const newConn = news.connection;
        if (isUnknown(newConn)) replaces.push("connection");
        else {
            const nc = (newConn ?? {}) as Record<string, unknown>;
            if (CONNECTION_IDENTITY.some((k) => isUnknown(nc[k]) || !same(oldConn[k], nc[k]))) replaces.push("connection");
        }
        for (const key of this.def.replaceOn) if (containsUnknown(news[key]) || !same(olds[key], news[key])) replaces.push(key);
        return replaces;
    }

    async create(inputs: Record<string, unknown>) {
        const step = inputs as I & StepEnvelope;
        return this.session(step, undefined, async (s) => {
            const computed = await this.def.create(s, step, this.hosts(step));
            return { id: this.def.id(step), outs: defined({ ...inputs, ...computed, hostKeyFingerprint: s.hostKeyFingerprint }) };
        });
    }

    async update(_id: string, olds: Record<string, unknown>, news: Record<string, unknown>) {
        const prior = olds as I & C & StepEnvelope;
        const next = news as I & StepEnvelope;
        return this.session(next, prior.hostKeyFingerprint, async (s) => {
            const computed = await this.def.update(s, prior, next, this.hosts(next));
            return { outs: defined({ ...news, ...computed, hostKeyFingerprint: s.hostKeyFingerprint }) };
        });
    }

    async delete(_id: string, outs: Record<string, unknown>) {
        const state = outs as I & C & StepEnvelope;
        if (this.def.deleteAcross) return this.def.deleteAcross(this.hosts(state), state);
        try {
            await this.session(state, state.hostKeyFingerprint, (s) => this.def.delete(s, state, this.hosts(state)));
        } catch (e) {
            if (e instanceof ConnectError && this.def.deleteSucceedsWhenUnreachable) {
                console.log(`[${this.def.kind} ${state.connection.host}] host unreachable at delete; nothing left to undo there`);
                return;
            }
            throw e;
        }
    }

    async read(id: string, props: Record<string, unknown>) {
        const state = props as I & C & StepEnvelope;
        const found = await this.session(state, state.hostKeyFingerprint, (s) => this.def.read(s, state, this.hosts(state)));
        if (found === undefined) return { id: "", props: {} };
        // Only what the state already holds, or a declared output: any other key would look like an input the
        // program dropped, and every later diff would report a change.
        const known = Object.entries(found).filter(([k]) => k in props || (this.def.outputs as readonly string[]).includes(k));
        return { id, props: defined({ ...props, ...Object.fromEntries(known) }) };
    }

    private session<T>(step: StepEnvelope, recordedFingerprint: string | undefined, fn: (s: SshSession) => Promise<T>): Promise<T> {
        if (this.def.ownHost === false) return fn(noSession(this.def.kind));
        const target = { ...step.connection, hostKeyFingerprint: step.connection.hostKeyFingerprint ?? recordedFingerprint };
        return withSession(target, this.def.policy ?? {}, { step: this.stepName(step) }, fn);
    }

    private stepName(step: StepEnvelope): string {
        return `${this.def.kind} ${this.def.id(step as I & StepEnvelope)}`;
    }

    private hosts(step: StepEnvelope): Hosts {
        const ctx = { step: this.stepName(step) };
        const policy = this.def.policy ?? {};
        return {
            on: (target, fn, override) => withSession(target, { ...policy, ...override }, ctx, fn),
            first: async (targets, what, fn, usable) => {
                let index = -1;
                const failures: string[] = [];
                for (const target of targets) {
                    index++;
                    let session: SshSession;
                    try {
                        session = await SshSession.open(target, { ...policy, ...PEER_POLICY }, ctx);
                    } catch (e) {
                        if (!(e instanceof ConnectError)) throw e;
                        failures.push(target.host);
                        continue;
                    }
                    try {
                        if (usable && !(await usable(session))) {
                            failures.push(`${target.host} (not usable)`);
                            continue;
                        }
                        return await fn(session, index);
                    } finally {
                        session.close();
                    }
                }
                throw new ConnectError(`${ctx.step}: none of the ${what} answered (${failures.join(", ") || "none given"})`);
            },
        };
    }
}
