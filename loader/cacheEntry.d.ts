/** The folder of every cache of the project (each its own subfolder). */
export const CACHE_ROOT: string;
/** The entry's text, or undefined when there is none or it is not whole (loader/cacheEntry.js). */
export function readEntry(file: string): string | undefined;
/** Writes the entry; then removes the other files in its folder whose names start with `samePrefix`. */
export function writeEntry(file: string, text: string, samePrefix: string): void;
