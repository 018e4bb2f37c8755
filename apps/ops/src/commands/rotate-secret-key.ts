import { pgSealedTables as authSealedTables } from '@ziti/auth/secret-keys/secret-keys.store';
import { pgSealedTables as pkiSealedTables } from '@ziti/pki-enrollment/secret-keys/secret-keys.store';
import {
  ConfigProblems,
  type Database,
  type ResealCounts,
  SecretBox,
  SecretKeyRotation,
  readSecretKeys,
} from '@ziti/platform';
import type { DatabaseService } from '../cli.ts';
import { type Io, databaseUrlProblem, openServiceDatabase, plural } from '../support.ts';

const sealing = ['auth', 'pki-enrollment'] as const satisfies readonly DatabaseService[];

function rotationOf(service: (typeof sealing)[number], database: Database, box: SecretBox) {
  return new SecretKeyRotation(service === 'auth' ? authSealedTables(database) : pkiSealedTables(database), box);
}

function line(service: string, table: string, c: ResealCounts, dryRun: boolean): string {
  return (
    `${service} ${table}: ${plural(c.records, 'row')}, ${plural(c.values, 'sealed value')}: ` +
    `${c.resealed} ${dryRun ? 'to re-seal' : 're-sealed'} with the current key, ${c.current} already under it` +
    (c.unreadable > 0 ? `, ${c.unreadable} opened by no key (rows ${c.unreadableKeys.join(', ')})` : '')
  );
}

/**
 * Seals every stored secret of auth and pki-enrollment again with `ZITI_SECRET_KEY`, opening what
 * `ZITI_SECRET_KEY_PREVIOUS` sealed (`SecretKeyRotation` over each service's sealed tables, straight
 * on its database: the rows are locked batch by batch, so it runs beside a live cluster whose
 * replicas already hold both keys). 0 when everything opens with the current key; 1 when a value
 * opens with no key.
 */
export async function rotateSecretKey(options: { dryRun: boolean; batchSize: number }, io: Io): Promise<number> {
  const problems = new ConfigProblems();
  const keys = problems.take(() => readSecretKeys(io.env));
  for (const service of sealing) {
    const problem = databaseUrlProblem(service, io.env);
    if (problem) problems.add(problem);
  }
  problems.done();
  if (keys!.previous.length === 0)
    io.out('ZITI_SECRET_KEY_PREVIOUS is not set: checking that ZITI_SECRET_KEY alone opens every sealed value');
  const box = new SecretBox(keys!.current, { previousSecrets: keys!.previous });
  let resealed = 0;
  let unreadable = 0;
  for (const service of sealing) {
    const database = await openServiceDatabase(service, io.env);
    try {
      for (const { table, counts } of await rotationOf(service, database, box).rotate(options)) {
        io.out(line(service, table, counts, options.dryRun));
        resealed += counts.resealed;
        unreadable += counts.unreadable;
      }
    } finally {
      await database.close();
    }
  }
  if (unreadable > 0) {
    io.err(
      `${plural(unreadable, 'sealed value')} opened with none of the keys: set ZITI_SECRET_KEY_PREVIOUS to every key used before, and run again`,
    );
    return 1;
  }
  if (options.dryRun) io.out(`dry run: ${plural(resealed, 'value')} would be re-sealed; nothing was written`);
  else if (resealed > 0)
    io.out(
      `re-sealed ${plural(resealed, 'value')}; run it again: once it re-seals nothing, ZITI_SECRET_KEY_PREVIOUS can be removed`,
    );
  else
    io.out(
      'every sealed value opens with ZITI_SECRET_KEY alone: ZITI_SECRET_KEY_PREVIOUS can be removed (then restart auth and pki-enrollment)',
    );
  return 0;
}
