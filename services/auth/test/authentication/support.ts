import {
  type ApiSessionStore,
  type Database,
  MemoryApiSessionStore,
  createUnitOfWork,
  migrate,
  openDatabase,
} from '@ziti/platform';
import { bindAuthStores, migrations } from '../../src/app.ts';
import type { AuthStores, UnitOfWork } from '../../src/shared/stores.ports.ts';
import type { PasswordHasher } from '../../src/passwords/passwords.ports.ts';
import { seedAuthData } from '../../src/shared/bootstrap.domain.ts';
import type {
  AuthenticationAttempt,
  AuthenticationAttempts,
} from '../../src/authentication-attempts/authentication-attempts.ports.ts';

/**
 * Auth's real stores on an in-memory Postgres (PGlite) with every migration applied: domain tests
 * run against the same SQL as production, with no fakes of the stores.
 */
export async function authTestBed(options: { database?: Database } = {}) {
  const database = options.database ?? (await openDatabase({ pgliteMemory: true }));
  await migrate(database, migrations);
  const work: UnitOfWork = createUnitOfWork<AuthStores>(database, undefined, 'auth', bindAuthStores);
  const sessions: ApiSessionStore = new MemoryApiSessionStore();
  return { database, work, sessions, close: () => database.close() };
}

/** A hasher that costs nothing: domain tests are about rules, not argon2. */
export const plainHasher: PasswordHasher = {
  async hash(password) {
    return { hash: Buffer.from(password).toString('base64'), salt: 'c2FsdA==' };
  },
  async verify(password, hash) {
    return Buffer.from(password).toString('base64') === hash;
  },
};

export async function seed(work: UnitOfWork): Promise<void> {
  await seedAuthData(work, plainHasher, { username: 'admin', password: 'admin-password' });
}

/** Keeps every reported authentication attempt, in order (the reporter's port, for domain tests). */
export class RecordedAttempts implements AuthenticationAttempts {
  readonly all: AuthenticationAttempt[] = [];
  report(attempt: AuthenticationAttempt): void {
    this.all.push(attempt);
  }
  last(): AuthenticationAttempt | undefined {
    return this.all.at(-1);
  }
}
