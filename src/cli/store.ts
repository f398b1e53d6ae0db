// `sessiontap store migrate --store URL`: the shared store's schema created or brought up to date (docs/DESIGN.md "The shared store"), under
// an advisory lock in one transaction, so taps may write meanwhile.
import type { Config } from "../config/parse.ts";
import { describe } from "../utils/describe-error.ts";
import { closeStore, migrate, openStore, redactUrl, SCHEMA_VERSION } from "../store/pg-client.ts";
import type { CommandIo } from "./command-io.ts";

/** Runs `store SUBCOMMAND`. */
export async function run(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const [sub, ...rest] = config.positional;
  if (sub !== "migrate" || rest.length > 0) {
    io.stderr(`sessiontap: store takes one subcommand, migrate${sub === undefined ? "" : `, got "${config.positional.join(" ")}"`}\n`);
    return 2;
  }
  if (config.store === null) {
    io.stderr(`sessiontap: store migrate needs the store (--store / SESSIONTAP_STORE)\n`);
    return 2;
  }
  const where = redactUrl(config.store);
  const sql = openStore(config.store, { max: 1, connectTimeoutS: 10 });
  try {
    const done = await migrate(sql);
    if (done.newer) {
      io.stdout(`The store ${where} is at schema version ${done.from}, newer than this sessiontap knows (${SCHEMA_VERSION}); left alone.\n`);
    } else if (done.applied.length === 0) {
      io.stdout(`The store ${where} is at schema version ${done.to}; nothing to do.\n`);
    } else {
      io.stdout(`Migrated the store ${where} from schema version ${done.from ?? "none"} to ${done.to} (applied ${done.applied.join(", ")}).\n`);
    }
    return 0;
  } catch (error) {
    io.stderr(`sessiontap: cannot migrate the store ${where}: ${describe(error)}\n`);
    return 1;
  } finally {
    await closeStore(sql);
  }
}
