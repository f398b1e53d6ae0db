/** Types of scripts/pg-test-cluster.mjs, for the tests that import it. */

/** A throwaway PostgreSQL cluster on a loopback port. */
export interface Cluster {
  url: string;
  port: number;
  dir: string;
  /** Stops the server (fast shutdown), keeping its data: an outage. */
  pause(): void;
  /** Kills it as a crash would (`pg_ctl -m immediate`), keeping its data. */
  crash(): void;
  /** Starts it again on the same port. */
  resume(): void;
  /** Stops it and removes its directory. */
  stop(): void;
}

/** Starts a cluster (initdb + pg_ctl start of the npm-shipped PostgreSQL, as `postgres` when root). */
export function startCluster(): Promise<Cluster>;
/** The directory holding initdb and pg_ctl: PG_BINDIR, else the npm package's. */
export function pgBinDir(): string;
/** The npm package holding this machine's PostgreSQL build. */
export function pgPackageName(): string;
/** How to get PostgreSQL when it is missing. */
export const PG_HINT: string;
/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number>;
