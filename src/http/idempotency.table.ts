export interface IdempotencyRecordTable {
  principal: string;
  idempotency_key: string;
  request_hash: string;
  status: number;
  body: string;
  created_at: number;
}
