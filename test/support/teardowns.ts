/** Runs what a test registered to undo, last first; every one runs even when one fails, the first failure is thrown after. */
export async function runTeardowns(teardowns: (() => unknown)[]): Promise<void> {
    const failures: unknown[] = [];
    for (const teardown of teardowns.splice(0).reverse()) {
        try {
            await teardown();
        } catch (e) {
            failures.push(e);
        }
    }
    if (failures.length) throw failures[0];
}
