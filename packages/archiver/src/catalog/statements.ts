// What the catalog's query modules that write need of the Catalog (run-queries.ts,
// failure-queries.ts): its cached statements, its durable transaction and the instant a row
// notes. An interface rather than the class, so that catalog.ts can call them without a cycle.
import type { SqlStatement } from './sql-database.js';

export interface CatalogStatements {
  /** A prepared statement, cached; on a catalog opened read-only, one that writes is refused. */
  statement(sql: string): SqlStatement;
  /** Runs `fn` in one transaction committed durably (nested calls join it). */
  transaction<T>(fn: () => T): T;
}

/** Now, as the catalog keeps the instants it observes: ISO 8601 UTC with milliseconds. */
export function stamp(): string {
  return new Date().toISOString();
}
