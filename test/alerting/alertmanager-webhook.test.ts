/**
 * An Alertmanager webhook taken as a whole. Each alert in it sees the monitor as the alerts
 * before it left it (a resolve that brings the monitor up, then a firing alert that takes it
 * down again). And it is all or nothing (decision 77): `svc serve` is killed with SIGKILL
 * while concurrent webhooks of many alerts each are being taken, restarted on the same data
 * directory, and every webhook is found either whole or absent, and whole whenever it was
 * answered 202: what svc holds is always a state Alertmanager sent, and a webhook it got no
 * answer for is resent whole. The kills land at fractions and multiples of the time one webhook
 * takes on this machine. Black-box: HTTP and signals only.
 */
import { afterAll, expect, test } from "bun:test";
import { type Client, TestServer } from "../support/harness.ts";

const SLOW = 90_000;
const WEBHOOKS = 6;
const ALERTS_PER_WEBHOOK = 1000;

let server: TestServer;
afterAll(async () => {
  await server?.dispose();
});

function webhook(round: number, n: number) {
  return {
    version: "4",
    status: "firing",
    alerts: Array.from({ length: ALERTS_PER_WEBHOOK }, (_, i) => ({
      status: "firing",
      labels: { alertname: `Crash${round}`, instance: `w${n}-${i}`, severity: "warning" },
      annotations: { summary: `webhook ${n} alert ${i}` },
      fingerprint: `r${round}-w${n}-${i}`,
    })),
  };
}

/** Every alert of the monitor, page by page. */
async function allAlerts(client: Client, monitorId: string): Promise<{ dedup_key: string }[]> {
  const out: { dedup_key: string }[] = [];
  let cursor: string | null = null;
  do {
    const res = await client.get(
      `/api/v1/alerts?monitor_id=${monitorId}&limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
    );
    expect(res.status).toBe(200);
    out.push(...res.body.data);
    cursor = res.body.next_cursor;
  } while (cursor);
  return out;
}

test(
  "alerts of one webhook see the monitor's status as the alerts before them left it",
  async () => {
    server = await TestServer.start();
    const client = server.client(server.init?.api_key.secret as string);
    const created = await client.post("/api/v1/monitors", { name: "Prometheus", type: "event" });
    expect(created.status).toBe(201);
    const monitor = created.body as { id: string; integration_key: string };
    const send = async (alerts: { status: "firing" | "resolved"; fingerprint: string }[]) => {
      const res = await fetch(`${server.base}/api/v1/integrations/alertmanager/${monitor.integration_key}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          version: "4",
          alerts: alerts.map((a) => ({ ...a, labels: { alertname: a.fingerprint } })),
        }),
      });
      expect(res.status).toBe(202);
    };
    const statusEvents = async () => {
      const res = await client.get("/api/v1/cloudevents/poll?filter=run.service.monitor.*&wait=0&limit=1000");
      expect(res.status).toBe(200);
      return (res.body.data as { type: string; subject: string }[])
        .filter((e) => e.subject === monitor.id)
        .map((e) => e.type.split(".")[3]);
    };
    const monitorStatus = async () => (await client.get(`/api/v1/monitors/${monitor.id}`)).body.status;

    // Two new alerts in one webhook: the monitor goes down once.
    await send([
      { status: "firing", fingerprint: "fp1" },
      { status: "firing", fingerprint: "fp2" },
    ]);
    expect(await monitorStatus()).toBe("down");
    expect(await statusEvents()).toEqual(["down"]);

    // Both resolved by hand while Prometheus still reports them: the monitor stays down.
    const open = (await client.get(`/api/v1/alerts?monitor_id=${monitor.id}&status=firing`)).body.data;
    for (const alert of open) {
      expect((await client.post(`/api/v1/alerts/${alert.id}/resolve`, {})).status).toBe(200);
    }
    expect(await monitorStatus()).toBe("down");

    // fp1 resolved brings the monitor up; fp3 firing in the same webhook takes it down again.
    await send([
      { status: "resolved", fingerprint: "fp1" },
      { status: "firing", fingerprint: "fp3" },
    ]);
    expect(await monitorStatus()).toBe("down");
    expect(await statusEvents()).toEqual(["down", "up", "down"]);
    const firing = (await client.get(`/api/v1/alerts?monitor_id=${monitor.id}&status=firing`)).body.data;
    expect(firing.map((a: { dedup_key: string }) => a.dedup_key)).toEqual(["fp3"]);
    await server.dispose();
  },
  SLOW,
);

test(
  "SIGKILL while webhooks are taken: each is whole or absent after the restart, whole when answered 202",
  async () => {
    server = await TestServer.start();
    const secret = server.init?.api_key.secret as string;
    const created = await server
      .client(secret)
      .post("/api/v1/monitors", { name: "Prometheus", type: "event" });
    expect(created.status).toBe(201);
    const { id: monitorId, integration_key: key } = created.body as { id: string; integration_key: string };
    const post = (round: number, n: number) =>
      fetch(`${server.base}/api/v1/integrations/alertmanager/${key}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(webhook(round, n)),
      });
    // How long one webhook takes here: the kills below land at fractions and multiples of it.
    const timed = Date.now();
    expect((await post(0, 0)).status).toBe(202);
    const oneWebhookMs = Date.now() - timed;
    let absentSeen = 0;
    let wholeSeen = 0;

    for (const [round, killAfter] of [0.5, 2, 4].map((f, i) => [i + 1, f * oneWebhookMs] as const)) {
      const answered = new Set<number>();
      const sends = Array.from({ length: WEBHOOKS }, (_, n) =>
        post(round, n)
          .then((res) => {
            if (res.status === 202) answered.add(n);
          })
          .catch(() => {}),
      );
      await Bun.sleep(killAfter);
      server.proc.kill("SIGKILL");
      await server.proc.exited;
      await Promise.all(sends);
      server = await TestServer.start({ dataDir: server.dataDir, init: false });

      const counts = new Map<number, number>();
      for (const alert of await allAlerts(server.client(secret), monitorId)) {
        const match = /^r(\d+)-w(\d+)-\d+$/.exec(alert.dedup_key);
        if (match && Number(match[1]) === round) {
          const n = Number(match[2]);
          counts.set(n, (counts.get(n) ?? 0) + 1);
        }
      }
      for (let n = 0; n < WEBHOOKS; n++) {
        const count = counts.get(n) ?? 0;
        expect([round, n, count === 0 || count === ALERTS_PER_WEBHOOK]).toEqual([round, n, true]);
        if (answered.has(n)) expect([round, n, count]).toEqual([round, n, ALERTS_PER_WEBHOOK]);
        if (count === 0) absentSeen += 1;
        else wholeSeen += 1;
      }
    }
    // The kills landed while webhooks were still being taken.
    expect(wholeSeen).toBeGreaterThan(0);
    expect(absentSeen).toBeGreaterThan(0);
  },
  SLOW,
);
