/**
 * `npm run build`: compiles `cli/main.ts` into the one self-contained executable `dist/svc`.
 *
 * - The SQL migrations are imported as text (src/db/migrations.ts), so they are inside the binary.
 * - `SVC_BUILD_VERSION` and `SVC_BUILD_COMMIT` (src/version.ts) are fixed at compile time.
 * - ink imports `react-devtools-core` only when `DEV=true` and the package resolves. It is not a
 *   dependency, and marking it external is not enough (the bundler hoists ink's import of it to
 *   the binary's start), so it is replaced by an inert stub module.
 * - The binary ignores `.env` and `bunfig.toml` of the directory it runs in: its configuration is
 *   the config file, `SVC_*` and flags only (DESIGN §2).
 */
import { mkdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "..");
const ENTRY = join(ROOT, "cli/main.ts");
const OUTFILE = join(ROOT, "dist/svc");

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version?: unknown };
  if (typeof pkg.version !== "string" || !pkg.version) throw new Error("package.json has no version");
  return pkg.version;
}

function gitCommit(): string {
  try {
    const result = Bun.spawnSync(["git", "rev-parse", "--short", "HEAD"], {
      cwd: ROOT,
      stdout: "pipe",
      stderr: "ignore",
    });
    const commit = result.stdout.toString().trim();
    return result.exitCode === 0 && /^[0-9a-f]{4,40}$/.test(commit) ? commit : "unknown";
  } catch {
    return "unknown";
  }
}

function formatBytes(bytes: number): string {
  return bytes >= 1024 * 1024
    ? `${(bytes / 1024 / 1024).toFixed(1)} MiB`
    : `${(bytes / 1024).toFixed(1)} KiB`;
}

/** Resolves `react-devtools-core` to a module whose functions do nothing. */
const stubDevtools: Bun.BunPlugin = {
  name: "stub-react-devtools-core",
  setup(build) {
    build.onResolve({ filter: /^react-devtools-core$/ }, () => ({
      path: "react-devtools-core",
      namespace: "svc-stub",
    }));
    build.onLoad({ filter: /.*/, namespace: "svc-stub" }, () => ({
      contents: "export default { initialize() {}, connectToDevTools() {} };",
      loader: "js",
    }));
  },
};

const started = performance.now();
const version = packageVersion();
const commit = gitCommit();
mkdirSync(join(ROOT, "dist"), { recursive: true });

const result = await Bun.build({
  entrypoints: [ENTRY],
  target: "bun",
  format: "esm",
  minify: true,
  plugins: [stubDevtools],
  define: {
    SVC_BUILD_VERSION: JSON.stringify(version),
    SVC_BUILD_COMMIT: JSON.stringify(commit),
    "process.env.NODE_ENV": JSON.stringify("production"),
  },
  compile: {
    outfile: OUTFILE,
    autoloadDotenv: false,
    autoloadBunfig: false,
  },
  throw: false,
});

if (!result.success) {
  for (const message of result.logs) console.error(message);
  console.error("build failed");
  process.exit(1);
}

const bytes = statSync(OUTFILE).size;
const seconds = ((performance.now() - started) / 1000).toFixed(1);
console.log(
  `built ${relative(process.cwd(), OUTFILE) || OUTFILE} (${formatBytes(bytes)}, ${bytes} bytes) ` +
    `version ${version} commit ${commit} in ${seconds}s`,
);
