/**
 * `sessiontap store migrate --store URL`: creates the shared store's schema or brings it up to date
 * (docs/DESIGN.md "The shared store"; src/store/pg-schema.ts). Safe to run while taps write: migrations take an advisory lock and
 * run in one transaction. Exit 0 when the schema is current, 1 when the store cannot be reached or
 * refused, 2 for a usage error.
 */
import type { Config } from "../config/parse.ts";
import { describe } from "../utils/describe-error.ts";
import { closeStore, openStore, redactUrl } from "../store/pg-client.ts";
import { migrate, SCHEMA_VERSION } from "../store/pg-schema.ts";
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
