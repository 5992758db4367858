/**
 * `svc serve` as an operator runs it: the first start on an empty data dir (DESIGN §2), restarts,
 * SIGTERM, configuration precedence (flag > env > file > default), bad configuration and a
 * database written by a newer svc.
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LATEST_SCHEMA_VERSION } from "../../src/db/migrations.ts";
import { Client, ROOT, svc, TestServer, tempDir, totpNow } from "../support/harness.ts";

setDefaultTimeout(60_000);

const CLI = join(ROOT, "cli/main.ts");
const KEY_FILE = "initial-admin-key";
const ALL_SCOPES = ["monitors", "alerts", "incidents", "schedules", "events", "admin"];

const dirs: string[] = [];
function dir(): string {
  const path = tempDir("svc-serve-");
  dirs.push(path);
  return path;
}
afterAll(() => {
  for (const path of dirs) rmSync(path, { recursive: true, force: true });
});

/** The environment of the test process without any `SVC_*` variable, plus `extra`. */
function cleanEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith("SVC_") && value !== undefined) env[key] = value;
  }
  return { ...env, ...extra };
}

function logLines(output: string): Record<string, any>[] {
  return output
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line));
}

interface Serving {
  proc: ReturnType<typeof Bun.spawn>;
  /** The "svc is serving" log record. */
  serving: Record<string, any>;
  base: string;
  stop: () => Promise<number>;
}

/**
 * Spawns `svc serve <args>` with exactly the `SVC_*` variables in `env`, from a temp cwd (so a
 * stray default `./data` never lands in the repo), and waits for the "svc is serving" line.
 */
async function serve(args: string[], env: Record<string, string> = {}): Promise<Serving> {
  const proc = Bun.spawn([process.execPath, CLI, "serve", ...args], {
    cwd: dir(),
    env: cleanEnv({ SVC_LOG_FORMAT: "json", ...env }),
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  });
  const stderr = new Response(proc.stderr as ReadableStream<Uint8Array>).text();
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let output = "";
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    output += decoder.decode(value);
    const line = output.split("\n").find((l) => l.includes('"svc is serving"'));
    if (line) {
      void (async () => {
        while (!(await reader.read()).done) {}
      })();
      const serving = JSON.parse(line);
      return {
        proc,
        serving,
        base: `http://${serving.listen}`,
        stop: async () => {
          proc.kill("SIGTERM");
          return proc.exited;
        },
      };
    }
  }
  proc.kill("SIGKILL");
  throw new Error(`svc serve did not start:\n${output}\n${await stderr}`);
}

/** Runs `svc serve <args>` expecting it to refuse to start; kills it if it serves instead. */
async function serveFails(args: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn([process.execPath, CLI, "serve", ...args], {
    cwd: dir(),
    env: cleanEnv({ SVC_LOG_FORMAT: "json", ...env }),
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  });
  const timer = setTimeout(() => proc.kill("SIGKILL"), 10_000);
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout as ReadableStream<Uint8Array>).text(),
    new Response(proc.stderr as ReadableStream<Uint8Array>).text(),
    proc.exited,
  ]);
  clearTimeout(timer);
  return { stdout, stderr, code };
}

function expectRefusal(result: { stdout: string; stderr: string; code: number }, message: string | RegExp) {
  expect(result.code).toBe(1);
  expect(result.stdout).toBe("");
  expect(result.stderr.split("\n")).toHaveLength(2);
  if (typeof message === "string") expect(result.stderr).toBe(`error: ${message}\n`);
  else expect(result.stderr).toMatch(message);
}

async function waitFor(check: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

function countOrgs(dataDir: string): number {
  const db = new Database(join(dataDir, "svc.db"), { readonly: true });
  try {
    return (db.query("SELECT COUNT(*) AS n FROM orgs").get() as { n: number }).n;
  } finally {
    db.close();
  }
}

describe("first start on an empty data dir", () => {
  let server: TestServer;
  let secret: string;
  beforeAll(async () => {
    server = await TestServer.start({ init: false });
    await waitFor(
      () => server.output.includes('"first start: created the default organization"'),
      "first-run log",
    );
    secret = readFileSync(join(server.dataDir, KEY_FILE), "utf8").trimEnd();
  });
  afterAll(() => server.dispose());

  test("creates org default with an invited owner admin@localhost", async () => {
    const client = server.client(secret);
    const org = await client.get("/api/v1/org");
    expect(org.status).toBe(200);
    expect(org.body).toMatchObject({ slug: "default", name: "Default", plan: "enterprise", seat_count: 1 });
    const users = await client.get("/api/v1/users");
    expect(users.status).toBe(200);
    expect(users.body.data).toHaveLength(1);
    expect(users.body.data[0]).toMatchObject({ email: "admin@localhost", role: "owner", status: "invited" });
    expect(users.body.has_more).toBe(false);
  });

  test("initial-admin-key has mode 0600 and holds a working owner-bound key with every scope", async () => {
    const file = join(server.dataDir, KEY_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, "utf8")).toBe(`${secret}\n`);
    expect(secret).toMatch(/^svc_[0-9A-Za-z]{40}$/);
    const client = server.client(secret);
    const owner = (await client.get("/api/v1/users")).body.data[0];
    const keys = await client.get("/api/v1/api-keys");
    expect(keys.status).toBe(200);
    expect(keys.body.data).toHaveLength(1);
    expect(keys.body.data[0]).toMatchObject({
      prefix: secret.slice(0, 12),
      scopes: ALL_SCOPES,
      user_id: owner.id,
      service: false,
      revoked_at: null,
    });
  });

  test("stdout is a JSON log: it names the key's prefix and file, never the secret", () => {
    const records = logLines(server.output);
    const first = records.filter((r) => r.msg === "first start: created the default organization");
    expect(first).toEqual([
      {
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        level: "info",
        msg: "first start: created the default organization",
        org: "default",
        owner: "admin@localhost",
        api_key_prefix: secret.slice(0, 12),
        api_key_file: join(server.dataDir, KEY_FILE),
        finish_sign_up: "svc admin user invite-link --org default --email admin@localhost",
      },
    ]);
    expect(server.output).not.toContain(secret);
    expect(server.output).not.toContain(secret.slice(12));
  });

  test("the sign-up command the log names works", async () => {
    const link = await server.admin([
      "user",
      "invite-link",
      "--org",
      "default",
      "--email",
      "admin@localhost",
    ]);
    const anon = new Client(server.base);
    const accepted = await anon.post("/api/v1/auth/accept-invite", {
      token: link.invite_token,
      password: "correct horse battery",
    });
    expect(accepted.status).toBe(200);
    const confirmed = await anon.post("/api/v1/auth/confirm-mfa", {
      token: link.invite_token,
      totp: totpNow(accepted.body.totp_secret),
    });
    expect(confirmed.status).toBe(200);
    expect((await server.client(confirmed.body.token).get("/api/v1/org")).body.slug).toBe("default");
  });

  test("SIGTERM exits 0 and leaves a database a second start opens without a new org", async () => {
    const dataDir = server.dataDir;
    expect(await server.stop("SIGTERM")).toBe(0);
    const records = logLines(server.output);
    expect(records.slice(-2).map((r) => [r.msg, r.signal])).toEqual([
      ["stopping", "SIGTERM"],
      ["stopped", undefined],
    ]);
    expect(existsSync(join(dataDir, "svc.db-wal"))).toBe(false);

    const db = new Database(join(dataDir, "svc.db"), { readonly: true });
    try {
      expect(db.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
      expect(db.query("SELECT slug FROM orgs").all()).toEqual([{ slug: "default" }]);
    } finally {
      db.close();
    }

    const again = await TestServer.start({ init: false, dataDir });
    try {
      expect((await again.client(secret).get("/api/v1/org")).status).toBe(200);
      await Bun.sleep(200);
      expect(again.output).not.toContain("first start");
      expect(countOrgs(dataDir)).toBe(1);
      expect(readFileSync(join(dataDir, KEY_FILE), "utf8")).toBe(`${secret}\n`);
    } finally {
      expect(await again.stop("SIGINT")).toBe(0);
    }
  });
});

describe("configuration precedence: flag > env > file > default", () => {
  let file: string;
  let fileDir: string;
  beforeAll(() => {
    fileDir = dir();
    file = join(dir(), "svc.toml");
    writeFileSync(
      file,
      [
        'listen = "127.0.0.2:0"',
        'base_url = "http://file.example"',
        'edition = "cloud"',
        `data_dir = ${JSON.stringify(fileDir)}`,
        "",
      ].join("\n"),
    );
  });

  async function observe(running: Serving) {
    try {
      const doc = await new Client(running.base).get("/api/v1/openapi.json");
      expect(doc.status).toBe(200);
      return {
        host: running.serving.listen.slice(0, running.serving.listen.lastIndexOf(":")),
        servers: doc.body.servers,
        edition: running.serving.edition,
        data_dir: running.serving.data_dir,
      };
    } finally {
      expect(await running.stop()).toBe(0);
    }
  }

  test("the file beats the defaults (--config)", async () => {
    expect(await observe(await serve(["--config", file]))).toEqual({
      host: "127.0.0.2",
      servers: [{ url: "http://file.example" }],
      edition: "cloud",
      data_dir: fileDir,
    });
  });

  test("env beats the file (SVC_CONFIG names the file)", async () => {
    const envDir = dir();
    const seen = await observe(
      await serve([], {
        SVC_CONFIG: file,
        SVC_LISTEN: "127.0.0.3:0",
        SVC_BASE_URL: "http://env.example/",
        SVC_DATA_DIR: envDir,
      }),
    );
    expect(seen).toEqual({
      host: "127.0.0.3",
      servers: [{ url: "http://env.example" }],
      edition: "cloud",
      data_dir: envDir,
    });
  });

  test("flags beat env and the file", async () => {
    const flagDir = dir();
    const seen = await observe(
      await serve(
        [
          "--config",
          file,
          "--listen",
          "127.0.0.4:0",
          "--base-url",
          "http://flag.example",
          "--edition",
          "oss",
        ],
        {
          SVC_LISTEN: "127.0.0.3:0",
          SVC_BASE_URL: "http://env.example",
          SVC_EDITION: "cloud",
          SVC_DATA_DIR: dir(),
        },
      ),
    );
    expect(seen.host).toBe("127.0.0.4");
    expect(seen.servers).toEqual([{ url: "http://flag.example" }]);
    expect(seen.edition).toBe("oss");
    const withDataDir = await observe(
      await serve(["--config", file, "--data-dir", flagDir], { SVC_DATA_DIR: dir() }),
    );
    expect(withDataDir.data_dir).toBe(flagDir);
  });

  test("defaults: edition oss, base_url derived from listen, a JSON config file works too", async () => {
    const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = probe.port;
    probe.stop(true);
    expect(await observe(await serve(["--data-dir", dir(), "--listen", `127.0.0.1:${port}`]))).toMatchObject({
      host: "127.0.0.1",
      servers: [{ url: `http://127.0.0.1:${port}` }],
      edition: "oss",
    });

    const jsonFile = join(dir(), "svc.json");
    writeFileSync(jsonFile, JSON.stringify({ listen: "127.0.0.5:0", base_url: "http://json.example" }));
    expect(await observe(await serve(["--config", jsonFile, "--data-dir", dir()]))).toMatchObject({
      host: "127.0.0.5",
      servers: [{ url: "http://json.example" }],
      edition: "oss",
    });
  });
});

describe("bad configuration: exit 1 with one line and no database", () => {
  function badFile(name: string, text: string): string {
    const path = join(dir(), name);
    writeFileSync(path, text);
    return path;
  }

  test("a bad value in the file", async () => {
    const dataDir = dir();
    const path = badFile("bad.toml", 'edition = "saas"\n');
    expectRefusal(
      await serveFails(["--config", path, "--data-dir", dataDir, "--listen", "127.0.0.1:0"]),
      /^error: invalid configuration: edition: [^\n]+\n$/,
    );
    expect(existsSync(join(dataDir, "svc.db"))).toBe(false);
  });

  test("an unknown key in the file", async () => {
    const path = badFile("unknown.toml", 'listen = "127.0.0.1:0"\n[limits]\npoll_per_hour = 5\n');
    expectRefusal(
      await serveFails(["--config", path, "--data-dir", dir()]),
      /^error: invalid configuration: limits\.poll_per_hour: [^\n]+\n$/,
    );
  });

  test("a file that is not TOML names the line", async () => {
    const path = badFile("broken.toml", 'listen = "127.0.0.1:0"\nedition = \n');
    expectRefusal(
      await serveFails(["--config", path, "--data-dir", dir()]),
      new RegExp(`^error: config file ${path} cannot be parsed: [^\\n]+ \\(line 2, column \\d+\\)\\n$`),
    );
  });

  test("a missing config file", async () => {
    const path = join(dir(), "absent.toml");
    expectRefusal(
      await serveFails(["--data-dir", dir()], { SVC_CONFIG: path }),
      `config file not found: ${path}`,
    );
  });

  test("a bad env value", async () => {
    const dataDir = dir();
    expectRefusal(
      await serveFails(["--data-dir", dataDir, "--listen", "127.0.0.1:0"], {
        SVC_LIMITS_POLL_PER_MINUTE: "lots",
      }),
      "SVC_LIMITS_POLL_PER_MINUTE must be a number, got 'lots'",
    );
    expectRefusal(
      await serveFails(["--data-dir", dataDir, "--listen", "127.0.0.1:0"], { SVC_DURABILITY: "sometimes" }),
      /^error: invalid configuration: durability: [^\n]+\n$/,
    );
    expect(existsSync(join(dataDir, "svc.db"))).toBe(false);
  });

  test("a bad flag value", async () => {
    const dataDir = dir();
    expectRefusal(
      await serveFails(["--data-dir", dataDir, "--listen", "localhost"]),
      /^error: invalid configuration: listen: [^\n]+\n$/,
    );
    expectRefusal(
      await serveFails(["--data-dir", dataDir, "--listen", "127.0.0.1:99999"]),
      "listen: port 99999 is out of range",
    );
    expectRefusal(
      await serveFails(["--data-dir", dataDir, "--listen", "127.0.0.1:0", "--base-url", "ftp://x"]),
      /^error: invalid configuration: base_url: [^\n]+\n$/,
    );
    expect(existsSync(join(dataDir, "svc.db"))).toBe(false);
  });
});

describe("a database newer than the code", () => {
  test("serve refuses to start, says why and leaves the database alone", async () => {
    const dataDir = dir();
    const migrated = await svc(["admin", "migrate", "--data-dir", dataDir, "--json"]);
    expect(migrated.code).toBe(0);
    const db = new Database(join(dataDir, "svc.db"));
    db.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, '0999_future', 0)");
    db.close();

    const message =
      `the database has schema version 999, newer than this svc understands (${LATEST_SCHEMA_VERSION}); ` +
      "run a newer svc or restore a backup";
    expectRefusal(await serveFails(["--data-dir", dataDir, "--listen", "127.0.0.1:0"]), message);
    expectRefusal(await svc(["admin", "org", "list", "--data-dir", dataDir, "--json"]), message);

    expect(countOrgs(dataDir)).toBe(0);
    expect(existsSync(join(dataDir, KEY_FILE))).toBe(false);
    const check = new Database(join(dataDir, "svc.db"), { readonly: true });
    try {
      expect(check.query("SELECT MAX(version) AS v FROM schema_migrations").get()).toEqual({ v: 999 });
    } finally {
      check.close();
    }
  });
});
