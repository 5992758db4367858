export interface StatusPageTable {
  id: string;
  org_id: string;
  slug: string;
  title: string;
  description: string;
  created_at: number;
  updated_at: number;
}
