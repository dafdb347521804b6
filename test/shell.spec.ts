import { strict as assert } from "node:assert";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Redactor } from "../providers/transport/redact";
import { quote, sh, ShellText } from "../providers/transport/shell";

/** One value per class of shell metacharacter, plus the ones that break naive quoting. */
export const HOSTILE_VALUES = [
    "a;touch CANARY",
    "a|touch CANARY",
    "a&touch CANARY",
    "a&&touch CANARY",
    "$(touch CANARY)",
    "`touch CANARY`",
    "'; touch CANARY; '",
    '"; touch CANARY; "',
    "a\ntouch CANARY",
    "*",
    "?",
    "[a-z]*",
    "~",
    "a > CANARY",
    "a < /etc/passwd",
    "$HOME ${PATH} $$",
    "\\'\\\\",
    "-rf",
    "--help",
    " leading and trailing ",
    "",
    "ünïcødé ✓",
];

describe("shell quoting", () => {
    it("a value passed through sh arrives as exactly one argument, unchanged, and runs nothing", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-quote-"));
        try {
            for (const raw of HOSTILE_VALUES) {
                const value = raw.replace(/CANARY/g, path.join(dir, "canary"));
                const out = execFileSync("sh", ["-c", sh`printf '%s\\0' ${value}`.text], { cwd: dir });
                assert.deepEqual(out.toString().split("\0").slice(0, -1), [value], JSON.stringify(value));
                assert.equal(fs.existsSync(path.join(dir, "canary")), false, `canary created by ${JSON.stringify(value)}`);
            }
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    it("lists become one word each; ShellText is inserted as it is", () => {
        assert.equal(sh`cmd ${["a b", "c"]} ${new ShellText("| wc -l")}`.text, "cmd 'a b' c | wc -l");
        assert.equal(quote("plain-word_1.2:3"), "plain-word_1.2:3");
        assert.equal(quote("it's"), `'it'\\''s'`);
    });

    it("refuses a NUL byte, which no shell argument can carry", () => {
        assert.throws(() => quote("a\0b"), /NUL/);
    });
});

describe("redaction", () => {
    it("replaces every occurrence of every secret, longest first", () => {
        const r = new Redactor(["hunter22", "hunter22-extended", undefined]);
        assert.equal(r.redact("pw=hunter22-extended and hunter22 again"), "pw=[secret] and [secret] again");
    });
});
