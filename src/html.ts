/** HTML escaping for the few pages and emails svc renders itself. */

/** Escapes `& < > " '` as numeric character references, for text and attribute values alike. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
