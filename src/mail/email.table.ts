export interface EmailOutboxTable {
  id: string;
  org_id: string | null;
  recipient: string;
  subject: string;
  text_body: string | null;
  html_body: string | null;
  status: "pending" | "sent" | "dead";
  attempts: number;
  next_attempt_at: number;
  last_error: string | null;
  created_at: number;
  sent_at: number | null;
}
