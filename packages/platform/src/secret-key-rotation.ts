import { type ResealCounts, type SecretBox, type SealedRecords, resealRecords } from './secret-box.ts';

/** The tables of one service that hold values sealed with the at-rest key, each walked in its own transactions. */
export interface SealedTables {
  readonly tables: readonly string[];
  /** Runs `fn` in one transaction over `table`'s sealed values. */
  transaction<T>(table: string, fn: (records: SealedRecords) => Promise<T>): Promise<T>;
}

/**
 * Key rotation of one service's sealed values (auth: the MFA records' TOTP secrets and recovery
 * codes; pki-enrollment: the controller PKI's private keys, the enrollments' tokens and JWTs): once
 * every replica runs with the new `ZITI_SECRET_KEY` and the old one in `ZITI_SECRET_KEY_PREVIOUS`,
 * `rotate` re-seals with the new key what the old one sealed, in batches, each batch one
 * transaction under its rows' locks. Resumable: only what is not under the current key is
 * rewritten, so a second run reports nothing re-sealed, and the old key can go.
 */
export class SecretKeyRotation {
  constructor(
    private readonly sealed: SealedTables,
    /** A box whose current key is the new one and whose previous keys are the old ones. */
    private readonly box: Pick<SecretBox, 'resealIfStale'>,
  ) {}

  async rotate(
    options: { batchSize?: number; dryRun?: boolean } = {},
  ): Promise<{ table: string; counts: ResealCounts }[]> {
    const out: { table: string; counts: ResealCounts }[] = [];
    for (const table of this.sealed.tables) {
      const counts = await resealRecords(this.box, (fn) => this.sealed.transaction(table, fn), options);
      out.push({ table, counts });
    }
    return out;
  }
}
