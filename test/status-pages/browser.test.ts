/**
 * The public status page in a real browser: headless Chromium from Debian (installed by
 * .ci/run), driven by playwright-core. It checks what a visitor sees, the banner's text and
 * colour, on a phone-sized screen, and keeps a screenshot in the test's temp dir.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { TestServer, tempDir } from "../support/harness.ts";

let server: TestServer;
let browser: Browser;

beforeAll(async () => {
  server = await TestServer.start();
  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}, 30_000);
afterAll(async () => {
  await browser?.close();
  await server.dispose();
});

test("a visitor on a phone sees a red Major Outage banner and the incident's public update", async () => {
  const api = server.client();
  const pageId = (await api.post("/api/v1/status-pages", { slug: "status", title: "Acme status" })).body.id;
  await api.post("/api/v1/incidents", {
    title: "Payments failing",
    severity: "critical",
    status_page_ids: [pageId],
    initial_update: { body: "Card payments fail for most customers." },
  });
  const context = await browser.newContext({
    viewport: { width: 390, height: 844 },
    javaScriptEnabled: false,
  });
  const tab = await context.newPage();
  const response = await tab.goto(`${server.base}/status/${server.orgSlug}/status`);
  expect(response?.status()).toBe(200);
  const banner = tab.locator("[role=status]");
  expect((await banner.textContent())?.trim()).toBe("Major Outage");
  // These functions run in the page; the test's own TypeScript has no DOM types, hence globalThis.
  expect(await banner.evaluate((el) => (globalThis as any).getComputedStyle(el).backgroundColor)).toBe(
    "rgb(185, 28, 28)",
  );
  expect(await tab.locator("h3").first().textContent()).toBe("Payments failing");
  expect(await tab.textContent("main")).toContain("Card payments fail for most customers.");
  // Readable on a phone: nothing wider than the screen.
  expect(
    await tab.evaluate(() => (globalThis as any).document.documentElement.scrollWidth),
  ).toBeLessThanOrEqual(390);
  const shot = join(tempDir("svc-browser-"), "status-page.png");
  await tab.screenshot({ path: shot, fullPage: true });
  console.log(`screenshot: ${shot}`);
  expect(existsSync(shot) && statSync(shot).size > 1000).toBe(true);
  await context.close();
}, 30_000);
