import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";

/** The SHA-256 of a file, streamed (image and release archives run to gigabytes). */
export function sha256Of(file: string): Promise<string> {
    return new Promise((resolve, reject) => {
        const hash = createHash("sha256");
        createReadStream(file)
            .on("data", (chunk) => hash.update(chunk))
            .on("end", () => resolve(hash.digest("hex")))
            .on("error", reject);
    });
}
