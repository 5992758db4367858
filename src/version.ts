/** Build identity. `scripts/build.ts` replaces these at compile time with `--define`. */
declare const SVC_BUILD_VERSION: string | undefined;
declare const SVC_BUILD_COMMIT: string | undefined;

export const VERSION = typeof SVC_BUILD_VERSION === "string" ? SVC_BUILD_VERSION : "0.1.0-dev";
export const COMMIT = typeof SVC_BUILD_COMMIT === "string" ? SVC_BUILD_COMMIT : "unknown";
