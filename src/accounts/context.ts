import type { Config } from "../config.ts";
import type { Store } from "../db/store.ts";
import type { Logger } from "../log.ts";

/** What the account services need from the app. */
export interface AccountsContext {
  store: Store;
  config: Config;
  log: Logger;
}
