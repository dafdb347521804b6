/** Where the resolution of a stack's config reports each problem and warning, by field path. */
import { Network, parseCidr } from "./net";
import { ConfigProblem } from "./spec";

export class Checker {
    readonly problems: ConfigProblem[] = [];
    readonly warnings: ConfigProblem[] = [];
    fail(path: string, message: string): void {
        this.problems.push({ path, message });
    }
    warn(path: string, message: string): void {
        this.warnings.push({ path, message });
    }
    /** Parses a CIDR that passed the format check; normalizes host bits with a warning. */
    network(path: string, text: string): Network {
        const n = parseCidr(text)!;
        if (n.hadHostBits) this.warn(path, `${text} has host bits set; using ${n.text}`);
        return n;
    }
}
