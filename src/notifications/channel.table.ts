export type ChannelType = "webhook" | "email" | "slack" | "cloudevents";

export interface NotificationChannelTable {
  id: string;
  org_id: string;
  name: string;
  type: ChannelType;
  /** JSON without secrets. */
  config: string;
  /** A webhook's signing secret (needed in clear to sign); never returned after create. */
  secret: string | null;
  trusted: number;
  enabled: number;
  created_at: number;
  updated_at: number;
}

export interface NotificationDeliveryTable {
  id: string;
  org_id: string;
  channel_id: string | null;
  user_id: string | null;
  alert_id: string | null;
  event_id: string;
  status: "pending" | "sent" | "dead";
  attempts: number;
  next_attempt_at: number;
  last_error: string | null;
  last_status: number | null;
  created_at: number;
  sent_at: number | null;
}
