/**
 * redactText with known secret values: every spelling the program, Pulumi or a tool on a node gives a secret
 * (plain, base64 whole or inside a larger encoded text, URL-encoded, JSON-escaped once or twice) is taken out,
 * whatever the secret's length; a short secret only where it stands as a whole token.
 */
import { strict as assert } from "node:assert";
import { MASK, redactText } from "../config/secrets";

const b64 = (text: string) => Buffer.from(text).toString("base64");

/** Every base64 character of `before + secret + after` that any bit of the secret decides, as [first, last]. */
function secretChars(before: string, secret: string): [number, number] {
    const start = Buffer.byteLength(before) * 8;
    const end = start + Buffer.byteLength(secret) * 8;
    return [Math.floor(start / 6), Math.floor((end - 1) / 6)];
}

describe("redaction of known secrets in every spelling", () => {
    it("plain: a secret of 4 characters or more wherever it occurs, inside words too", () => {
        assert.equal(redactText("login s3cr3t-pw failed; xs3cr3t-pwx", ["s3cr3t-pw"]), `login ${MASK} failed; x${MASK}x`);
        assert.equal(redactText("token=Wq4z", ["Wq4z"]), `token=${MASK}`);
    });

    it("short: a secret under 4 characters is taken out where it stands as a whole token", () => {
        assert.equal(redactText("authentication failed for admin/Zq9", ["Zq9"]), `authentication failed for admin/${MASK}`);
        assert.equal(redactText("Zq9", ["Zq9"]), MASK);
        assert.equal(redactText('{"password":"ab","x":[1,"ab"]}', ["ab"]), `{"password":"${MASK}","x":[1,"${MASK}"]}`);
        assert.equal(redactText("pin 7 rejected", ["7"]), `pin ${MASK} rejected`);
        assert.equal(redactText(JSON.stringify("first line\nZq9\tsecond"), ["Zq9"]), `"first line\\n${MASK}\\tsecond"`, "after a JSON escape");
    });

    it("short: left alone inside a longer word or number", () => {
        const text = "the table has 17 rows; abab is not ab_ but cab is; xa%2Fby";
        assert.equal(redactText(text, ["ab", "7", "a/b"]), `the table has 17 rows; abab is not ${MASK}_ but cab is; xa%2Fby`);
    });

    it("short: its other spellings as whole tokens too (JSON-escaped, URL-encoded, base64)", () => {
        const out = redactText(`json "a\\"b" url a%2Fb b64 ${b64('a"b')} and ${b64("a/b")}`, ['a"b', "a/b"]);
        assert.equal(out, `json "${MASK}" url ${MASK} b64 ${MASK} and ${MASK}`);
    });

    it("JSON-escaped: once, and twice as in JSON embedded in a JSON string", () => {
        const secret = 'Ma"ster\\Pw1';
        const once = JSON.stringify({ password: secret });
        const twice = JSON.stringify({ event: once });
        for (const text of [once, twice]) {
            const out = redactText(text, [secret]);
            assert.ok(!out.includes("ster"), out);
            assert.doesNotThrow(() => JSON.parse(out), out);
        }
        assert.deepEqual(JSON.parse(JSON.parse(redactText(twice, [secret])).event), { password: MASK });
    });

    it("URL-encoded: encodeURIComponent and the form encoding with + for a space", () => {
        const secret = "pa ss/wörd&42";
        for (const spelled of [encodeURIComponent(secret), new URLSearchParams({ p: secret }).toString().slice(2), encodeURIComponent(secret).replace(/%20/g, "+")]) {
            assert.equal(redactText(`?p=${spelled}&q=1`, [secret]), `?p=${MASK}&q=1`, spelled);
        }
    });

    it("base64 of the whole secret, padded or not", () => {
        for (const secret of ["WorkerPw2", "WorkerPw23", "WorkerPw234"]) {
            assert.equal(redactText(`data ${b64(secret)} end`, [secret]), `data ${MASK} end`);
            assert.equal(redactText(`data ${b64(secret).replace(/=+$/, "")} end`, [secret]), `data ${MASK} end`);
        }
    });

    it("base64 of a larger text holding the secret, at each offset mod 3: every character a bit of the secret decides goes", () => {
        const secret = "hunter2-xyz";
        for (const before of ["", "a", "ab", "abc", "line: "]) {
            for (const after of ["", "!", "!?", "\n# end\n"]) {
                const encoded = b64(before + secret + after);
                const [first, last] = secretChars(before, secret);
                const out = redactText(`files ${encoded} end`, [secret]);
                const kept = `${encoded.slice(0, first)}${MASK}${encoded.slice(last + 1)}`;
                assert.equal(out, `files ${kept.replace(/\[secret\]=+/, MASK)} end`, JSON.stringify({ before, after }));
            }
        }
    });

    it("a password in a proxy URL: the URL's base64, user:password's (Basic, a Docker auth), a YAML file's, the password's", () => {
        const url = "http://user:Pa55w0rd@proxy:3128";
        const yamlFile = `# written by k8s-vnf\nhttp_proxy: ${url}\nhttps_proxy: ${url}\n`;
        const text = [
            `Proxy-Authorization: Basic ${b64("user:Pa55w0rd")}`,
            `{"auths":{"proxy:3128":{"auth":"${b64("user:Pa55w0rd")}"}}}`,
            `env HTTP_PROXY_B64=${b64(url)}`,
            `K8S_VNF_FILES=group_vars/all/k8s-vnf-proxy.yml 0600 ${b64(yamlFile)}`,
            `curl: (407) ${url}`,
        ].join("\n");
        const out = redactText(text, [url]);
        for (const leak of ["Pa55w0rd", b64("user:Pa55w0rd").slice(0, 8), b64(url).slice(8, 30), "user:"]) assert.ok(!out.includes(leak), `${leak} in ${out}`);
        for (const offset of ["", "a", "ab"]) assert.ok(!out.includes(b64(`${offset}Pa55w0rd`).slice(4, 12)), out);
        assert.match(out, /^Proxy-Authorization: Basic \[secret\]$/m);
        assert.match(out, /"auth":"\[secret\]"/);
        assert.match(out, /^env HTTP_PROXY_B64=\[secret\]$/m);
        const encoded = "http://user:P%40ss%2Fw0rd@proxy:3128";
        assert.equal(redactText(`auth ${b64("user:P@ss/w0rd")} pw P@ss/w0rd`, [encoded]), `auth ${MASK} pw ${MASK}`, "a URL-encoded password as curl decodes it");
    });

    it("a short password in a proxy URL: user:password in base64 goes, the password only as a token", () => {
        const url = "http://admin:Zq9@proxy:3128";
        const out = redactText(`Basic ${b64("admin:Zq9")} then ${b64(url)}; Zq9x stays, Zq9 goes`, [url]);
        assert.equal(out, `Basic ${MASK} then ${MASK}; Zq9x stays, ${MASK} goes`);
    });

    it("overlapping spellings and secrets are taken out as one", () => {
        assert.equal(redactText("xx abcdefgh yy", ["abcdef", "defgh"]), `xx ${MASK} yy`);
        assert.equal(redactText("aaaaa", ["aaaa"]), MASK);
    });

    it("a dry run's plan of several hundred KB with many secrets is redacted in well under a second", () => {
        const secrets = Array.from({ length: 30 }, (_, i) => `secret-value-${i}-${"x".repeat(i)}`).concat(["Zq9", "ab", "http://u:Pa55w0rd@proxy:3128"]);
        const line = `~ k8s-vnf:KubernetesNode worker-3 update [diff: ~proxy,labels] ${b64("some config ".repeat(4))} tab table\n`;
        const text = JSON.stringify({ text: line.repeat(Math.ceil(400_000 / line.length)) + secrets[7] });
        const started = process.hrtime.bigint();
        const out = redactText(text, secrets);
        const ms = Number(process.hrtime.bigint() - started) / 1e6;
        assert.ok(out.endsWith(`${MASK}"}`) && out.includes("tab table"), out.slice(-100));
        assert.ok(ms < 750, `${ms.toFixed(0)} ms`);
    });
});
