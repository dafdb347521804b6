/**
 * The VIMs the service holds: OpenStack credentials for clusters' VMs, and Kubernetes VIMs for CNFs. Its
 * clusters' Kubernetes VIMs come from their stack outputs (kubernetesVims.ts); others are registered here, as
 * with Tacker, by `openstack vim register --config-file vim.yaml NAME` (Tacker's NFVO API, `POST /v1.0/vims`;
 * python-tackerclient `tacker/v1_0/nfvo/vim_utils.py` `args2body_vim` makes the body) or, for OpenStack, by
 * `POST /k8s-vnf/v1/vims`; changed by `openstack vim set` (`PUT /v1.0/vims/{id}`) or `PATCH /k8s-vnf/v1/vims/{id}`,
 * deleted by `openstack vim delete` or `DELETE /k8s-vnf/v1/vims/{id}` (vimRecords.ts). No answer ever carries a
 * VIM's password or token.
 */
import { randomUUID } from "node:crypto";
import { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { tackerVimView } from "./kubernetesVims";
import { conflict } from "./problem";
import { SCHEMAS } from "./schemas";
import { Store } from "./store";
import { assertRemovable, findVim, patchUpdate, registration, shownVim, tackerUpdate } from "./vimRecords";

type Body = Record<string, any>;

export interface VimRouteContext {
    store: Store;
    /** The base URL of `Location` headers. */
    base: (request: FastifyRequest) => string;
    /** What a GET shows of a stored record. */
    visible: (record: Body) => Body;
}

export function vimRoutes(app: FastifyInstance, { store, base, visible }: VimRouteContext): void {
    app.post(`/k8s-vnf/v1/vims`, { schema: { body: SCHEMAS.vimRegistration } }, async (request, reply) => {
        const { password, id: requested, ...rest } = request.body as Body;
        const id = requested ?? randomUUID();
        if (await store.get("vims", id)) throw conflict(`VIM ${id} is already registered`);
        await store.put([{ table: "vims", id, body: { id, ...rest, __password: password } }]);
        return reply.code(201).header("location", `${base(request)}/k8s-vnf/v1/vims/${id}`).send({ id, ...rest });
    });
    app.get(`/k8s-vnf/v1/vims`, async () => (await store.listMasked("vims")).map(visible));
    app.get<{ Params: { id: string } }>(`/k8s-vnf/v1/vims/:id`, async (request) => visible(await shownVim(store, request.params.id)));
    app.patch<{ Params: { id: string } }>(`/k8s-vnf/v1/vims/:id`, { schema: { body: SCHEMAS.vimUpdate } }, async (request) => {
        const record = await patchUpdate(store, await findVim(store, request.params.id), request.body as Body);
        await store.put([{ table: "vims", id: String(record.id), body: record }]);
        return visible(record);
    });

    // Tacker's NFVO VIM API, what `openstack vim list/show/register/delete` call.
    const tackerVims = async (request: FastifyRequest) => {
        const query = request.query as Record<string, string | undefined>;
        const vims = (await store.listMasked("vims")).filter((v) => (query.id === undefined || v.id === query.id) && (query.name === undefined || v.name === query.name));
        return { vims: vims.map(tackerVimView) };
    };
    const tackerVim = async (request: FastifyRequest<{ Params: { id: string } }>) => ({ vim: tackerVimView(await shownVim(store, idOf(request.params.id))) });
    const register = async (request: FastifyRequest, reply: FastifyReply) => {
        const record = await registration((request.body as Body).vim, store);
        await store.put([{ table: "vims", id: record.id, body: record }]);
        return reply.code(201).send({ vim: tackerVimView(record) });
    };
    const update = async (request: FastifyRequest<{ Params: { id: string } }>) => {
        const record = await tackerUpdate(store, await findVim(store, idOf(request.params.id)), (request.body as Body).vim);
        await store.put([{ table: "vims", id: String(record.id), body: record }]);
        return { vim: tackerVimView(record) };
    };
    const unregister = async (request: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) => {
        const vim = await findVim(store, idOf(request.params.id));
        await assertRemovable(store, vim);
        await store.remove("vims", String(vim.id));
        return reply.code(204).send();
    };
    app.delete<{ Params: { id: string } }>(`/k8s-vnf/v1/vims/:id`, unregister);
    app.get("/v1.0/vims", tackerVims);
    app.get("/v1.0/vims.json", tackerVims);
    app.post("/v1.0/vims", { schema: { body: SCHEMAS.tackerVimRegistration } }, register);
    app.post("/v1.0/vims.json", { schema: { body: SCHEMAS.tackerVimRegistration } }, register);
    app.get<{ Params: { id: string } }>("/v1.0/vims/:id", tackerVim);
    app.put<{ Params: { id: string } }>("/v1.0/vims/:id", { schema: { body: SCHEMAS.tackerVimUpdate } }, update);
    app.delete<{ Params: { id: string } }>("/v1.0/vims/:id", unregister);
}

/** The client may add `.json` to a VIM's path (python-tackerclient's `format`). */
const idOf = (segment: string) => segment.replace(/\.json$/, "");

