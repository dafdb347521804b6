/** Certificates for a lab registry, made with openssl. */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

/** A CA and a server certificate for `ip` (and the name `registry.lab`), made with openssl in `dir`. */
export function makeCertificates(dir: string, ip: string, name: string): { ca: string; certificate: string; privateKey: string } {
    const run = (args: string[]) => {
        const r = spawnSync("openssl", args, { cwd: dir, encoding: "utf8" });
        if (r.status !== 0) throw new Error(`openssl ${args[0]}: ${r.stderr}`);
    };
    run(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", `${name}-ca.key`, "-out", `${name}-ca.crt`, "-days", "2", "-subj", `/CN=${name} lab CA`]);
    run(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${ip}`]);
    fs.writeFileSync(path.join(dir, `${name}.ext`), `subjectAltName=IP:${ip},DNS:registry.lab\n`);
    run(["x509", "-req", "-in", `${name}.csr`, "-CA", `${name}-ca.crt`, "-CAkey", `${name}-ca.key`, "-CAcreateserial", "-out", `${name}.crt`, "-days", "2", "-extfile", `${name}.ext`]);
    const read = (f: string) => fs.readFileSync(path.join(dir, f), "utf8");
    return { ca: read(`${name}-ca.crt`), certificate: read(`${name}.crt`), privateKey: read(`${name}.key`) };
}
