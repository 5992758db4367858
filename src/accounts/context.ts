import type { Config } from "../config.ts";
import type { Store } from "../db/store.ts";
import type { Logger } from "../log.ts";

/** What the services need from the app. `config` may be replaced once the port is bound. */
export interface AccountsContext {
  store: Store;
  config: Config;
  log: Logger;
}
