/**
 * `--event-log` as the Pulumi CLI writes it (v3.248.0, pkg/backend/display/display.go `startEventLogger`):
 * `tcp://host:port` streams each event as JSON over gRPC (`pulumirpc.Events/StreamEvents`, what the Node
 * SDK asks of a CLI newer than 3.205: sdk/nodejs/automation/stack.ts `setupEventLog`); any other value is a
 * file, truncated, one JSON event per line.
 */
import * as fs from "node:fs";
import * as path from "node:path";

export interface EventLog {
    write(event: Record<string, unknown>): void;
    close(): Promise<void>;
}

export function openEventLog(target: string | undefined): EventLog {
    if (!target) return { write: () => undefined, close: async () => undefined };
    if (target.startsWith("tcp://")) return grpcEventLog(target.slice("tcp://".length));
    const fd = fs.openSync(target, fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_TRUNC | fs.constants.O_APPEND, 0o666);
    return {
        write: (event) => fs.writeSync(fd, `${JSON.stringify(event)}\n`),
        close: async () => fs.closeSync(fd),
    };
}

function grpcEventLog(address: string): EventLog {
    // The SDK's generated stubs with the gRPC library they were built against.
    const protoDir = path.dirname(require.resolve("@pulumi/pulumi/proto/events_grpc_pb"));
    const grpc = require(require.resolve("@grpc/grpc-js", { paths: [protoDir] }));
    const services = require("@pulumi/pulumi/proto/events_grpc_pb");
    const messages = require("@pulumi/pulumi/proto/events_pb");
    const client = new services.EventsClient(address, grpc.credentials.createInsecure());
    let finished: (err: Error | null) => void = () => undefined;
    const done = new Promise<Error | null>((resolve) => (finished = resolve));
    const stream = client.streamEvents((err: Error | null) => finished(err));
    return {
        write(event) {
            const request = new messages.EventRequest();
            request.setEvent(`${JSON.stringify(event)}\n`);
            stream.write(request);
        },
        async close() {
            stream.end();
            await done;
            client.close();
        },
    };
}
