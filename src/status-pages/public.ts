/**
 * Public status pages: `/status/{org_slug}/{page_slug}` (HTML that needs no script) and
 * `…/index.json`. Only public updates ever appear. A rendered page is kept until any commit
 * (`Store.dataVersion`) or for at most 30 seconds (its relative times), so a traffic spike is
 * served from memory and a committed incident change shows on the next request.
 */
import type { Store } from "../db/store.ts";
import { escapeHtml } from "../html.ts";
import type { IncidentTable, IncidentUpdateTable } from "../incidents/incident.table.ts";
import { iso } from "../time.ts";
import { type Banner, bannerFor } from "./banner.ts";
import { findPageBySlugs, incidentsOnPage, publicUpdatesOf } from "./status-pages.repository.ts";

const RECENT_MS = 7 * 86_400_000;
const CACHE_MS = 30_000;
const CACHE_LIMIT = 1000;

interface PublicIncident {
  id: string;
  title: string;
  status: string;
  severity: string;
  started_at: string;
  resolved_at: string | null;
  updates: { status: string; body: string; created_at: string; edited: boolean }[];
}

export interface PublicPage {
  page: { slug: string; title: string; description: string };
  banner: Banner;
  active_incidents: PublicIncident[];
  recent_incidents: PublicIncident[];
  generated_at: string;
}

interface Rendered {
  json: string;
  html: string;
}

export class PublicStatusPages {
  private readonly cache = new Map<string, { version: number; at: number; rendered: Rendered | null }>();

  constructor(private readonly store: Store) {}

  /** The page rendered both ways, or null for an unknown org or page. */
  async render(orgSlug: string, pageSlug: string, now = Date.now()): Promise<Rendered | null> {
    const key = `${orgSlug}/${pageSlug}`;
    const version = this.store.dataVersion();
    const cached = this.cache.get(key);
    if (cached && cached.version === version && now - cached.at < CACHE_MS) return cached.rendered;
    const data = await this.load(orgSlug, pageSlug, now);
    const rendered = data ? { json: JSON.stringify(data), html: renderHtml(data, now) } : null;
    if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
    this.cache.set(key, { version, at: now, rendered });
    return rendered;
  }

  private async load(orgSlug: string, pageSlug: string, now: number): Promise<PublicPage | null> {
    const db = this.store.read;
    const page = await findPageBySlugs(db, orgSlug, pageSlug);
    if (!page) return null;
    const incidents = await incidentsOnPage(db, page.id, now - RECENT_MS);
    const updates = await publicUpdatesOf(
      db,
      incidents.map((i) => i.id),
    );
    const view = (i: IncidentTable) => toPublic(i, updates);
    const active = incidents.filter((i) => i.status !== "resolved");
    return {
      page: { slug: page.slug, title: page.title, description: page.description },
      banner: bannerFor(active),
      active_incidents: active.map(view),
      recent_incidents: incidents
        .filter((i) => i.status === "resolved")
        .sort((a, b) => (b.resolved_at ?? 0) - (a.resolved_at ?? 0))
        .map(view),
      generated_at: iso(now),
    };
  }
}

function toPublic(incident: IncidentTable, updates: IncidentUpdateTable[]): PublicIncident {
  return {
    id: incident.id,
    title: incident.title,
    status: incident.status,
    severity: incident.severity,
    started_at: iso(incident.started_at),
    resolved_at: incident.resolved_at === null ? null : iso(incident.resolved_at),
    updates: updates
      .filter((u) => u.incident_id === incident.id)
      .map((u) => ({
        status: u.status,
        body: u.body,
        created_at: iso(u.created_at),
        edited: u.edited_at !== null,
      })),
  };
}

const COLOURS: Record<Banner["colour"], { background: string; text: string }> = {
  red: { background: "#b91c1c", text: "#ffffff" },
  amber: { background: "#b45309", text: "#ffffff" },
  green: { background: "#15803d", text: "#ffffff" },
  blue: { background: "#1d4ed8", text: "#ffffff" },
};

const STATUS_LABELS: Record<string, string> = {
  investigating: "Investigating",
  identified: "Identified",
  monitoring: "Monitoring",
  resolved: "Resolved",
  maintenance: "Maintenance",
};

function when(at: string, now: number): string {
  const ms = Date.parse(at);
  const minutes = Math.round((now - ms) / 60_000);
  const relative =
    minutes < 1
      ? "just now"
      : minutes < 60
        ? `${minutes} minute${minutes === 1 ? "" : "s"} ago`
        : minutes < 48 * 60
          ? `${Math.round(minutes / 60)} hours ago`
          : `${Math.round(minutes / 1440)} days ago`;
  const utc = `${at.slice(0, 10)} ${at.slice(11, 16)} UTC`;
  return `<time datetime="${at}">${utc}</time> <span class="ago">(${relative})</span>`;
}

function incidentHtml(incident: PublicIncident, now: number): string {
  const updates = incident.updates
    .map((u) => {
      const body = u.body ? `<p class="body">${escapeHtml(u.body).replace(/\n/g, "<br>")}</p>` : "";
      const edited = u.edited ? ` <span class="edited">(edited)</span>` : "";
      return `<li><strong>${escapeHtml(STATUS_LABELS[u.status] ?? u.status)}</strong>${edited} · ${when(u.created_at, now)}${body}</li>`;
    })
    .join("");
  return `<article class="incident"><h3>${escapeHtml(incident.title)}</h3>
<p class="meta">${escapeHtml(STATUS_LABELS[incident.status] ?? incident.status)} · ${escapeHtml(incident.severity)} · started ${when(incident.started_at, now)}</p>
${updates ? `<ol class="updates">${updates}</ol>` : ""}</article>`;
}

export function renderHtml(data: PublicPage, now: number): string {
  const colour = COLOURS[data.banner.colour];
  const active = data.active_incidents.length
    ? `<section aria-labelledby="active"><h2 id="active">Active incidents</h2>${data.active_incidents.map((i) => incidentHtml(i, now)).join("")}</section>`
    : "";
  const recent = `<section aria-labelledby="recent"><h2 id="recent">Recent incidents</h2>${
    data.recent_incidents.length
      ? data.recent_incidents.map((i) => incidentHtml(i, now)).join("")
      : "<p>No incidents in the past 7 days.</p>"
  }</section>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(data.page.title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:48rem;margin:0 auto;padding:1rem;line-height:1.5;color:#111}
.banner{padding:1rem 1.25rem;border-radius:.5rem;font-size:1.25rem;font-weight:600;background:${colour.background};color:${colour.text}}
.incident{border-top:1px solid #ddd;padding:.75rem 0}.meta,.ago,.edited{color:#555}.updates{padding-left:1.25rem}
.body{margin:.25rem 0 .75rem}h1{font-size:1.6rem}h2{font-size:1.25rem;margin-top:2rem}h3{margin:.25rem 0}</style></head>
<body><header><h1>${escapeHtml(data.page.title)}</h1>${data.page.description ? `<p>${escapeHtml(data.page.description)}</p>` : ""}</header>
<main><div class="banner" role="status" data-colour="${data.banner.colour}">${escapeHtml(data.banner.text)}</div>
${active}${recent}</main>
<footer><p class="ago">Updated ${when(data.generated_at, now)}</p></footer></body></html>`;
}

export function notFoundHtml(): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Status page not found</title><style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem}</style></head>
<body><main><h1>Status page not found</h1><p>There is no status page at this address. Check the link you followed.</p></main></body></html>`;
}
