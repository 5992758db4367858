/**
 * Test harness: a temp data dir, the real CLI (`bun cli/main.ts …`) and a real `svc serve` on a
 * random loopback port. Everything a test sees goes through HTTP or the CLI, as a user's would.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Secret, TOTP } from "otpauth";

export const ROOT = resolve(import.meta.dir, "../..");
const CLI = join(ROOT, "cli/main.ts");

export function tempDir(prefix = "svc-test-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  json: () => any;
}

/** Runs `svc <args>` through the real CLI entry point. */
export async function svc(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const proc = Bun.spawn([process.execPath, CLI, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr, json: () => JSON.parse(stdout) };
}

export async function admin(dataDir: string, args: string[]): Promise<any> {
  const result = await svc(["admin", ...args, "--data-dir", dataDir, "--json"]);
  if (result.code !== 0)
    throw new Error(`svc admin ${args.join(" ")} failed (${result.code}): ${result.stderr}`);
  return result.json();
}

export interface Response2 {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/** A small JSON client for one base URL and one bearer credential. */
export class Client {
  constructor(
    readonly base: string,
    readonly credential?: string,
  ) {}

  as(credential?: string): Client {
    return new Client(this.base, credential);
  }

  async request(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Response2> {
    const init: RequestInit = { method, headers: { ...headers } };
    const h = init.headers as Record<string, string>;
    if (this.credential) h.authorization = `Bearer ${this.credential}`;
    if (body !== undefined) {
      init.body = typeof body === "string" ? body : JSON.stringify(body);
      h["content-type"] ??= "application/json";
    }
    const response = await fetch(`${this.base}${path}`, init);
    const text = await response.text();
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = null;
    }
    return { status: response.status, headers: response.headers, body: parsed, text };
  }

  get(path: string, headers?: Record<string, string>) {
    return this.request("GET", path, undefined, headers);
  }
  post(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.request("POST", path, body ?? {}, headers);
  }
  put(path: string, body: unknown, headers?: Record<string, string>) {
    return this.request("PUT", path, body, headers);
  }
  patch(path: string, body: unknown, headers?: Record<string, string>) {
    return this.request("PATCH", path, body, headers);
  }
  delete(path: string, headers?: Record<string, string>) {
    return this.request("DELETE", path, undefined, headers);
  }
}

export interface InitResult {
  org: { id: string; slug: string; name: string };
  owner: { id: string; email: string };
  api_key: { id: string; secret: string; prefix: string };
  ingest_token: { id: string; token: string };
}

export interface ServerOptions {
  env?: Record<string, string>;
  args?: string[];
  /** Run `svc admin init` first (the scripted path) instead of the first-run default org. */
  init?: boolean;
  dataDir?: string;
}

/** A running `svc serve` with its captured output. */
export class TestServer {
  output = "";
  private constructor(
    readonly dataDir: string,
    readonly base: string,
    readonly proc: ReturnType<typeof Bun.spawn>,
    readonly init: InitResult | null,
  ) {}

  static async start(options: ServerOptions = {}): Promise<TestServer> {
    const dataDir = options.dataDir ?? tempDir();
    const init =
      options.init === false
        ? null
        : ((await admin(dataDir, [
            "init",
            "--org-name",
            "Acme",
            "--org-slug",
            `acme-${Math.random().toString(36).slice(2, 8)}`,
            "--owner-email",
            "owner@acme.test",
          ])) as InitResult);
    const proc = Bun.spawn(
      [
        process.execPath,
        CLI,
        "serve",
        "--data-dir",
        dataDir,
        "--listen",
        "127.0.0.1:0",
        ...(options.args ?? []),
      ],
      {
        cwd: ROOT,
        env: { ...process.env, SVC_LOG_FORMAT: "json", ...options.env },
        stdout: "pipe",
        stderr: "pipe",
        stdin: "ignore",
      },
    );
    const server = new TestServer(dataDir, "", proc, init);
    const base = await server.waitForListen();
    return Object.assign(server, { base }) as TestServer;
  }

  private async waitForListen(): Promise<string> {
    const deadline = Date.now() + 15_000;
    const reader = (this.proc.stdout as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    void this.pump(this.proc.stderr as ReadableStream<Uint8Array>);
    while (Date.now() < deadline) {
      const { value, done } = await reader.read();
      if (done) break;
      this.output += decoder.decode(value);
      const line = this.output.split("\n").find((l) => l.includes('"svc is serving"'));
      if (line) {
        void this.pumpReader(reader);
        return `http://${JSON.parse(line).listen}`;
      }
    }
    throw new Error(`svc serve did not start:\n${this.output}`);
  }

  private async pump(stream: ReadableStream<Uint8Array>): Promise<void> {
    await this.pumpReader(stream.getReader());
  }

  private async pumpReader(reader: {
    read(): Promise<{ value?: Uint8Array; done: boolean }>;
  }): Promise<void> {
    const decoder = new TextDecoder();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      this.output += decoder.decode(value);
    }
  }

  client(credential?: string): Client {
    return new Client(this.base, credential ?? this.init?.api_key.secret);
  }

  admin(args: string[]): Promise<any> {
    return admin(this.dataDir, args);
  }

  get orgSlug(): string {
    return this.init?.org.slug ?? "default";
  }

  /** SIGTERM and wait; returns the exit code. */
  async stop(signal: NodeJS.Signals | number = "SIGTERM"): Promise<number> {
    this.proc.kill(signal);
    return this.proc.exited;
  }

  async dispose(): Promise<void> {
    if (this.proc.exitCode === null) await this.stop("SIGKILL");
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

export function totpNow(secret: string): string {
  return new TOTP({ algorithm: "SHA1", digits: 6, period: 30, secret: Secret.fromBase32(secret) }).generate();
}

/**
 * Invites `email` with `role` and takes them through sign-up (invite link from the admin CLI,
 * password, TOTP). Returns the user, their session token and TOTP secret.
 */
export async function signUpUser(
  server: TestServer,
  email: string,
  role: string,
  password = "correct horse battery",
) {
  const client = server.client();
  const invited = await client.post("/api/v1/users", { email, role });
  if (invited.status !== 201) throw new Error(`invite failed: ${invited.text}`);
  const link = await server.admin(["user", "invite-link", "--org", server.orgSlug, "--email", email]);
  const anon = client.as();
  const accepted = await anon.post("/api/v1/auth/accept-invite", { token: link.invite_token, password });
  if (accepted.status !== 200) throw new Error(`accept failed: ${accepted.text}`);
  const confirmed = await anon.post("/api/v1/auth/confirm-mfa", {
    token: link.invite_token,
    totp: totpNow(accepted.body.totp_secret),
  });
  if (confirmed.status !== 200) throw new Error(`confirm failed: ${confirmed.text}`);
  return {
    user: invited.body as { id: string; email: string },
    token: confirmed.body.token as string,
    totpSecret: accepted.body.totp_secret as string,
    password,
  };
}

/** A second org in the same database, created with the admin CLI. */
export async function secondOrg(
  server: TestServer,
): Promise<{ id: string; slug: string; key: string; token: string }> {
  const slug = `other-${Math.random().toString(36).slice(2, 8)}`;
  const created = await server.admin([
    "org",
    "create",
    "--name",
    "Other",
    "--slug",
    slug,
    "--owner-email",
    "boss@other.test",
  ]);
  return { id: created.org.id, slug, key: created.api_key.secret, token: created.ingest_token.token };
}
