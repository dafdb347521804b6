import * as net from "node:net";

/**
 * An OpenStack endpoint that accepts every connection and never answers: the OpenStack provider's first
 * request waits there, and the update that runs it with it, holding the stack's lock.
 */
export async function silentEndpoint(): Promise<{ env: Record<string, string>; connections: () => number; close: () => Promise<void> }> {
    const sockets = new Set<net.Socket>();
    let connections = 0;
    const server = net.createServer((socket) => {
        connections++;
        sockets.add(socket);
        socket.on("error", () => undefined);
        socket.on("close", () => sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(0, "127.0.0.1", resolve);
    });
    const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/v3`;
    return {
        env: { OS_AUTH_URL: url, OS_USERNAME: "admin", OS_PASSWORD: "lock-test-password", OS_PROJECT_NAME: "admin", OS_USER_DOMAIN_NAME: "Default", OS_PROJECT_DOMAIN_NAME: "Default", OS_REGION_NAME: "RegionOne" },
        connections: () => connections,
        close: () => {
            for (const socket of sockets) socket.destroy();
            return new Promise((resolve) => server.close(() => resolve()));
        },
    };
}
