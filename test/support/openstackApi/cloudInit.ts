/**
 * STAND-IN for cloud-init at a VM's first boot (the lab OpenStack API's, and the test engine's labCloud.ts), for
 * the cloud-config keys the program writes (components/server.ts passwordLoginCloudConfig): `users` (the
 * image's default user, here `ubuntu`, and named users made with a home, the shell and a sudoers line, as
 * cloud-init's cc_users_groups and distros.create_user do), `chpasswd.users` (passwords set with chpasswd, read
 * from stdin, never a command line) and `ssh_pwauth` (the lab's sshd already takes passwords). Any other key is
 * refused, as a stand-in must not pretend to do what it does not.
 */
import * as YAML from "yaml";
import { sh } from "../../../providers/transport/shell";
import { Lab } from "../../lab/lab";

export async function applyCloudConfig(lab: Lab, host: string, userData: string): Promise<void> {
    if (!userData.startsWith("#cloud-config\n")) throw new Error("the lab's cloud-init stand-in reads #cloud-config user data only");
    const config = YAML.parse(userData) as { users?: (string | { name: string; shell?: string; sudo?: string })[]; chpasswd?: { users?: { name: string; password: string }[] }; [key: string]: unknown };
    const unknown = Object.keys(config).filter((k) => !["users", "chpasswd", "ssh_pwauth"].includes(k));
    if (unknown.length) throw new Error(`the lab's cloud-init stand-in does not apply ${unknown.join(", ")}`);
    for (const user of config.users ?? []) {
        if (user === "default") continue;
        if (typeof user !== "object" || !/^[a-z_][a-z0-9_-]*$/.test(user.name)) throw new Error(`the lab's cloud-init stand-in cannot make user ${JSON.stringify(user)}`);
        const sudoersFile = `/etc/sudoers.d/90-cloud-init-${user.name}`;
        const sudoers = user.sudo ? sh`printf '%s %s\n' ${user.name} ${user.sudo} > ${sudoersFile} && chmod 0440 ${sudoersFile}` : sh`true`;
        await lab.inside(host, sh`{ id ${user.name} >/dev/null 2>&1 || useradd --create-home --shell ${user.shell ?? "/bin/bash"} ${user.name}; } && ${sudoers}`.text);
    }
    const passwords = (config.chpasswd?.users ?? []).map((u) => `${u.name}:${u.password}\n`).join("");
    if (passwords) await lab.inside(host, "chpasswd", { input: passwords });
}
