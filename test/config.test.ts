import { afterAll, describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError, loadConfig } from "../src/config.ts";
import { tempDir } from "./support/harness.ts";

const dir = tempDir("svc-config-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("configuration", () => {
  test("defaults make svc serve work with no file", () => {
    const config = loadConfig({}, {}, false);
    expect(config.listen).toBe("127.0.0.1:8080");
    expect(config.base_url).toBe("http://127.0.0.1:8080");
    expect(config.edition).toBe("oss");
    expect(config.durability).toBe("full");
    expect(config.limits).toEqual({
      poll_per_minute: 60,
      streams_per_org: 10,
      replies_per_minute: 60,
      ingest_events_per_second: 0,
      batch_max_events: 256,
      max_event_bytes: 1048576,
      max_request_bytes: 16777216,
    });
    expect(config.retention).toEqual({ events_days: 30, replies_days: 365, alerts_days: 0 });
    expect(config.log.format).toBe("json");
    expect(Object.isFrozen(config.limits)).toBe(true);
  });

  test("precedence is flag > env > file > default, for nested keys too", () => {
    const toml = join(dir, "svc.toml");
    writeFileSync(
      toml,
      'listen = "127.0.0.1:7000"\nedition = "cloud"\n[limits]\npoll_per_minute = 5\nstreams_per_org = 3\n',
    );
    const fromFile = loadConfig({ config: toml }, {}, false);
    expect(fromFile.listen).toBe("127.0.0.1:7000");
    expect(fromFile.limits.poll_per_minute).toBe(5);

    const env = { SVC_LISTEN: "127.0.0.1:7001", SVC_LIMITS_POLL_PER_MINUTE: "9" };
    const fromEnv = loadConfig({ config: toml }, env, false);
    expect(fromEnv.listen).toBe("127.0.0.1:7001");
    expect(fromEnv.limits.poll_per_minute).toBe(9);
    expect(fromEnv.limits.streams_per_org).toBe(3);
    expect(fromEnv.edition).toBe("cloud");

    const fromFlag = loadConfig({ config: toml, listen: "127.0.0.1:7002", edition: "oss" }, env, false);
    expect(fromFlag.listen).toBe("127.0.0.1:7002");
    expect(fromFlag.edition).toBe("oss");
  });

  test("SVC_CONFIG names the file; JSON files work too", () => {
    const json = join(dir, "svc.json");
    writeFileSync(json, JSON.stringify({ durability: "process", retention: { events_days: 3 } }));
    const config = loadConfig({}, { SVC_CONFIG: json }, false);
    expect(config.durability).toBe("process");
    expect(config.retention.events_days).toBe(3);
  });

  test("bad values are refused with the key named", () => {
    expect(() => loadConfig({ edition: "enterprise-plus" }, {}, false)).toThrow(/edition/);
    expect(() => loadConfig({}, { SVC_LIMITS_POLL_PER_MINUTE: "lots" }, false)).toThrow(ConfigError);
    expect(() => loadConfig({ config: join(dir, "missing.toml") }, {}, false)).toThrow(/not found/);
    const unknown = join(dir, "unknown.toml");
    writeFileSync(unknown, "colour = 'blue'\n");
    expect(() => loadConfig({ config: unknown }, {}, false)).toThrow(/colour/);
  });
});
