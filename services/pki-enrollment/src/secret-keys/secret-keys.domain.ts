import { type ResealCounts, type SecretBox, resealRecords } from '@ziti/platform/secret-box';
import type { SealedTables } from './secret-keys.ports.ts';

/**
 * Key rotation of pki-enrollment's sealed values (the controller PKI's private keys, the
 * enrollments' tokens and JWTs): once every replica runs with the new `ZITI_SECRET_KEY` and the old
 * one in `ZITI_SECRET_KEY_PREVIOUS`, `rotate` re-seals with the new key what the old one sealed, in
 * batches, each batch one transaction under its rows' locks. Resumable: only what is not under the
 * current key is rewritten, so a second run reports nothing re-sealed, and the old key can go.
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
