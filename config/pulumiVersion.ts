/**
 * The oldest Pulumi engine this program runs under: heal replaces VMs through `replacementTrigger`, which engines
 * before 3.208 ignore without a word (a heal would report success having done nothing). The program refuses an
 * older engine (index.ts), the CLI refuses an older self before the program runs (Pulumi.yaml
 * `requiredPulumiVersion`), and the LCM service refuses an older CLI at its first operation (stackRunner.ts).
 */
export const MINIMUM_PULUMI_VERSION = "3.208.0";

/** The range Pulumi checks (semver range syntax, blang/semver ParseRange), in Pulumi.yaml and the program. */
export const PULUMI_VERSION_RANGE = `>=${MINIMUM_PULUMI_VERSION}`;
