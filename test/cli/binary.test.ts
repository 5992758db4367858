/**
 * Smoke test of the compiled executable: `bun scripts/build.ts` makes `dist/svc`, which then runs
 * from a directory outside the repo (no source tree, no node_modules): `version`, `admin init`,
 * `serve`, an authenticated request, SIGTERM. A `.env` in that directory is not read: the binary's
 * configuration is the config file, `SVC_*` variables and flags only.
 */
import { expect, test } from "bun:test";
import { readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LATEST_SCHEMA_VERSION } from "../../src/db/migrations.ts";
import { Client, ROOT, tempDir } from "../support/harness.ts";

const BINARY = join(ROOT, "dist/svc");

function env(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith("SVC_") && value !== undefined) out[key] = value;
  }
  return { ...out, SVC_LOG_FORMAT: "json" };
}

async function run(command: string[], cwd: string) {
  const proc = Bun.spawn(command, { cwd, env: env(), stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { stdout, stderr, code };
}

test("dist/svc builds and runs outside the repo: version, admin init, serve, an API call, SIGTERM", async () => {
  const built = await run([process.execPath, join(ROOT, "scripts/build.ts")], ROOT);
  expect({ code: built.code, stderr: built.stderr }).toEqual({ code: 0, stderr: "" });
  expect(built.stdout).toContain("dist/svc");
  expect(statSync(BINARY).mode & 0o111).not.toBe(0);

  const cwd = tempDir("svc-binary-cwd-");
  const dataDir = tempDir("svc-binary-data-");
  let proc: ReturnType<typeof Bun.spawn> | null = null;
  try {
    writeFileSync(join(cwd, ".env"), "SVC_EDITION=cloud\n");
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
    const head = Bun.spawnSync(["git", "rev-parse", "--short", "HEAD"], { cwd: ROOT });
    const commit = head.exitCode === 0 ? head.stdout.toString().trim() : "unknown";
    const version = await run([BINARY, "version", "--json"], cwd);
    expect(version.code).toBe(0);
    expect(JSON.parse(version.stdout)).toEqual({
      version: pkg.version,
      commit,
      schema_version: LATEST_SCHEMA_VERSION,
    });

    const init = await run(
      [
        BINARY,
        "admin",
        "init",
        "--org-name",
        "Binary",
        "--org-slug",
        "binary",
        "--owner-email",
        "owner@binary.test",
        "--data-dir",
        dataDir,
        "--json",
      ],
      cwd,
    );
    expect({ code: init.code, stderr: init.stderr }).toEqual({ code: 0, stderr: "" });
    const created = JSON.parse(init.stdout);
    expect(created.org.slug).toBe("binary");

    const server = Bun.spawn([BINARY, "serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir], {
      cwd,
      env: env(),
      stdout: "pipe",
      stderr: "pipe",
      stdin: "ignore",
    });
    proc = server;
    const stderr = new Response(server.stderr).text();
    const reader = server.stdout.getReader();
    const decoder = new TextDecoder();
    let output = "";
    let serving: { listen: string; edition: string } | null = null;
    const deadline = Date.now() + 15_000;
    while (!serving && Date.now() < deadline) {
      const { value, done } = await reader.read();
      if (done) break;
      output += decoder.decode(value);
      const line = output.split("\n").find((l) => l.includes('"svc is serving"'));
      if (line) serving = JSON.parse(line);
    }
    if (!serving) throw new Error(`dist/svc serve did not start:\n${output}\n${await stderr}`);
    void (async () => {
      while (!(await reader.read()).done) {}
    })();
    expect(serving.listen).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(serving.edition).toBe("oss");

    const client = new Client(`http://${serving.listen}`, created.api_key.secret);
    const org = await client.get("/api/v1/org");
    expect(org.status).toBe(200);
    expect(org.body).toMatchObject({ id: created.org.id, slug: "binary", name: "Binary" });
    expect((await client.as().get("/api/v1/org")).status).toBe(401);

    server.kill("SIGTERM");
    expect(await server.exited).toBe(0);
    expect(await stderr).toBe("");
  } finally {
    if (proc && proc.exitCode === null) proc.kill("SIGKILL");
    rmSync(cwd, { recursive: true, force: true });
    rmSync(dataDir, { recursive: true, force: true });
  }
}, 180_000);
