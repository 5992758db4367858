/** Status pages: CRUD with unique slugs per org. */
import type { AccountsContext } from "../accounts/context.ts";
import { isSlug } from "../accounts/org.ts";
import { AppError, errors, requireName } from "../errors.ts";
import { toPage } from "../http/pagination.ts";
import { newId } from "../ids.ts";
import type { StatusPageTable } from "./status-page.table.ts";
import { toStatusPage } from "./status-page.ts";
import {
  deletePage,
  findPage,
  insertPage,
  listPages,
  slugTaken,
  updatePage,
} from "./status-pages.repository.ts";

export class StatusPageService {
  constructor(private readonly ctx: AccountsContext) {}

  async list(orgId: string, limit: number, cursor: (string | number)[] | null) {
    const rows = await listPages(this.ctx.store.read, orgId, cursor ? String(cursor[0]) : undefined, limit);
    return toPage(rows, limit, "status_pages", (r) => [r.id], toStatusPage);
  }

  async get(orgId: string, id: string) {
    const row = await findPage(this.ctx.store.read, orgId, id);
    if (!row) throw errors.notFound("Status page");
    return toStatusPage(row);
  }

  async create(orgId: string, input: { slug: string; title: string; description?: string }) {
    const id = newId("spg");
    await this.ctx.store.write(async (tx) => {
      if (await slugTaken(tx, orgId, input.slug, null))
        throw new AppError("conflict", `The slug '${input.slug}' is taken.`);
      const now = Date.now();
      await insertPage(tx, {
        id,
        org_id: orgId,
        slug: input.slug,
        title: requireName(input.title, "title"),
        description: input.description ?? "",
        created_at: now,
        updated_at: now,
      });
    });
    return this.get(orgId, id);
  }

  async update(orgId: string, id: string, patch: { slug?: string; title?: string; description?: string }) {
    await this.ctx.store.write(async (tx) => {
      if (!(await findPage(tx, orgId, id))) throw errors.notFound("Status page");
      if (patch.slug !== undefined && !isSlug(patch.slug)) throw errors.field("slug", "must be a slug");
      if (patch.slug !== undefined && (await slugTaken(tx, orgId, patch.slug, id))) {
        throw new AppError("conflict", `The slug '${patch.slug}' is taken.`);
      }
      const changes: Partial<StatusPageTable> = { updated_at: Date.now() };
      if (patch.slug !== undefined) changes.slug = patch.slug;
      if (patch.title !== undefined) changes.title = requireName(patch.title, "title");
      if (patch.description !== undefined) changes.description = patch.description;
      await updatePage(tx, id, changes);
    });
    return this.get(orgId, id);
  }

  async remove(orgId: string, id: string) {
    await this.ctx.store.write(async (tx) => {
      if (!(await findPage(tx, orgId, id))) throw errors.notFound("Status page");
      await deletePage(tx, id);
    });
  }
}
