import type { SealedRecords } from '@ziti/platform/secret-box';

/** The tables of pki-enrollment that hold values sealed with the at-rest key, each walked in its own transactions. */
export interface SealedTables {
  readonly tables: readonly string[];
  /** Runs `fn` in one transaction over `table`'s sealed values. */
  transaction<T>(table: string, fn: (records: SealedRecords) => Promise<T>): Promise<T>;
}
