/**
 * A small Server-Sent Events parser (the WHATWG "event stream interpretation"): lines end in
 * CRLF, LF or CR (also across chunk boundaries); `data:` lines join with "\n"; `id:` sets the
 * last event id (ignored when it holds NUL); a blank line dispatches; `:` lines are comments.
 *
 * Written here because `eventsource-parser` is only present as a dependency of the
 * `eventsource` dev dependency, and the connector ships in the compiled binary.
 */

export interface SseMessage {
  /** The last event id at dispatch time (the cursor after this event, for svc). */
  id: string | undefined;
  event: string | undefined;
  data: string;
}

export interface SseHandlers {
  onMessage(message: SseMessage): void;
  onComment?(text: string): void;
  onRetry?(ms: number): void;
}

export class SseParser {
  private buffer = "";
  private data: string[] = [];
  private eventType: string | undefined;
  private lastId: string | undefined;
  private skipLeadingLf = false;
  private first = true;

  constructor(private readonly handlers: SseHandlers) {}

  feed(chunk: string): void {
    let text = this.buffer + chunk;
    if (this.first && text.length > 0) {
      this.first = false;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    let start = 0;
    if (this.skipLeadingLf && text.length > 0) {
      if (text.charCodeAt(0) === 10) start = 1;
      this.skipLeadingLf = false;
    }
    const length = text.length;
    while (start < length) {
      let end = start;
      let code = 0;
      while (end < length) {
        code = text.charCodeAt(end);
        if (code === 10 || code === 13) break;
        end += 1;
      }
      if (end === length) break;
      this.line(text.slice(start, end));
      if (code === 13) {
        if (end + 1 < length) start = text.charCodeAt(end + 1) === 10 ? end + 2 : end + 1;
        else {
          start = end + 1;
          this.skipLeadingLf = true;
        }
      } else {
        start = end + 1;
      }
    }
    this.buffer = start === 0 ? text : text.slice(start);
  }

  private line(line: string): void {
    if (line === "") {
      this.dispatch();
      return;
    }
    const colon = line.indexOf(":");
    if (colon === 0) {
      this.handlers.onComment?.(line.slice(1).trimStart());
      return;
    }
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    switch (field) {
      case "data":
        this.data.push(value);
        break;
      case "id":
        if (!value.includes("\0")) this.lastId = value;
        break;
      case "event":
        this.eventType = value;
        break;
      case "retry":
        if (/^\d+$/.test(value)) this.handlers.onRetry?.(Number(value));
        break;
      default:
      // Unknown fields are ignored.
    }
  }

  private dispatch(): void {
    const data = this.data;
    const eventType = this.eventType;
    this.data = [];
    this.eventType = undefined;
    if (data.length === 0) return;
    this.handlers.onMessage({ id: this.lastId, event: eventType, data: data.join("\n") });
  }
}
