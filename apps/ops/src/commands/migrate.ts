import { migrate } from '@ziti/platform';
import type { DatabaseService } from '../cli.ts';
import {
  CommandFailure,
  type Io,
  describeError,
  migrationsOf,
  openServiceDatabase,
  plural,
  requireDatabaseUrls,
} from '../support.ts';

/**
 * Applies each service's migrations to its database (`migrate`, the same append-only migrations the
 * service applies at start, under the same advisory lock) and says what it applied. Every URL is
 * checked before the first connection; a service that fails does not stop the others. 0 when every
 * database is current, 1 otherwise.
 */
export async function migrateCommand(services: readonly DatabaseService[], io: Io): Promise<number> {
  requireDatabaseUrls(services, io.env);
  let failed = 0;
  for (const service of services) {
    try {
      const migrations = await migrationsOf(service);
      const database = await openServiceDatabase(service, io.env);
      try {
        const applied = await migrate(database, migrations);
        io.out(
          applied.length === 0
            ? `${service}: up to date (${plural(migrations.length, 'migration')} of its own, all applied)`
            : `${service}: applied ${applied.join(', ')}`,
        );
      } finally {
        await database.close();
      }
    } catch (err) {
      failed++;
      if (err instanceof CommandFailure) for (const line of err.lines) io.out(line);
      else io.out(`${service}: migrations failed: ${describeError(err)}`);
    }
  }
  return failed > 0 ? 1 : 0;
}
