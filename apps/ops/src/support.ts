import { readAuditProcessConfig, auditDatabaseVar } from '@ziti/audit/config';
import { authDatabaseVar, readAuthProcessConfig } from '@ziti/auth/config';
import { readFabricProcessConfig } from '@ziti/fabric/config';
import { readGatewayProcessConfig } from '@ziti/gateway/config';
import { inventoryDatabaseVar, readInventoryProcessConfig } from '@ziti/inventory/config';
import { pkiDatabaseVar, readPkiProcessConfig } from '@ziti/pki-enrollment/config';
import { type Database, type Migration, ConfigError, env, openDatabase, urlSchemes } from '@ziti/platform';
import { policyDatabaseVar, readPolicyProcessConfig } from '@ziti/policy/config';
import type { DatabaseService, ServiceName } from './cli.ts';

/** What a command reads and writes: its environment, standard streams (tests capture them). */
export interface Io {
  env: NodeJS.ProcessEnv;
  out(line: string): void;
  err(line: string): void;
  /** All of standard input, as text. */
  readStdin(): Promise<string>;
}

/** A command that ran and failed for a reason it can name: the lines to print, exit 1. */
export class CommandFailure extends Error {
  constructor(readonly lines: string[]) {
    super(lines.join('\n'));
    this.name = 'CommandFailure';
  }
}

/** Each service's database variable (`<SERVICE>_DATABASE_URL`), as its `main.ts` reads it. */
export const databaseVars: Record<DatabaseService, string> = {
  auth: authDatabaseVar,
  'pki-enrollment': pkiDatabaseVar,
  policy: policyDatabaseVar,
  inventory: inventoryDatabaseVar,
  audit: auditDatabaseVar,
};

/** Each service's configuration reader: the one its `main.ts` runs before it connects to anything. */
export const configReaders: Record<ServiceName, (source: NodeJS.ProcessEnv) => unknown> = {
  gateway: (source) => readGatewayProcessConfig(source),
  auth: (source) => readAuthProcessConfig(source),
  'pki-enrollment': (source) => readPkiProcessConfig(source),
  policy: (source) => readPolicyProcessConfig(source),
  inventory: (source) => readInventoryProcessConfig(source),
  audit: (source) => readAuditProcessConfig(source),
  fabric: (source) => readFabricProcessConfig(source),
};

/** A service's migrations as its composition root lists them (loaded on demand: they pull the service in). */
export async function migrationsOf(service: DatabaseService): Promise<Migration[]> {
  switch (service) {
    case 'auth':
      return (await import('@ziti/auth/app')).migrations;
    case 'pki-enrollment':
      return (await import('@ziti/pki-enrollment/app')).migrations;
    case 'policy':
      return (await import('@ziti/policy/app')).migrations;
    case 'inventory':
      return (await import('@ziti/inventory/app')).migrations;
    case 'audit':
      return (await import('@ziti/audit/app')).migrations;
  }
}

/** The problem with a service's database URL in `source`, or undefined when it is usable. */
export function databaseUrlProblem(service: DatabaseService, source: NodeJS.ProcessEnv): string | undefined {
  try {
    env.url(urlSchemes.postgres)(source[databaseVars[service]] || undefined, databaseVars[service]);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/** Checks the database URL of every one of `services` before anything connects: one failure listing every problem. */
export function requireDatabaseUrls(services: readonly DatabaseService[], source: NodeJS.ProcessEnv): void {
  const problems = services.map((s) => databaseUrlProblem(s, source)).filter((p): p is string => p !== undefined);
  if (problems.length > 0) throw new ConfigError(problems);
}

/** Opens a service's database with a small pool (the URL checked by `requireDatabaseUrls`). */
export async function openServiceDatabase(service: DatabaseService, source: NodeJS.ProcessEnv): Promise<Database> {
  const database = await openDatabase({ url: source[databaseVars[service]]!, poolSize: 4 });
  try {
    await database.withConnection((c) => c.query('select 1'));
  } catch (err) {
    await database.close().catch(() => undefined);
    throw new CommandFailure([
      `${service}: cannot reach its database (${databaseVars[service]}): ${describeError(err)}`,
    ]);
  }
  return database;
}

/**
 * What went wrong, in words an operator can act on and with nothing secret: the error's message,
 * its system or SQLSTATE code and address, and its cause's; never a URL (it may hold a password),
 * a statement's parameters or a stack.
 */
export function describeError(err: unknown): string {
  const parts: string[] = [];
  let current: unknown = err;
  for (let depth = 0; depth < 4 && current; depth++) {
    if (!(current instanceof Error)) {
      // An API error's cause: its reason (never its `value`, which may be what was refused).
      const cause = current as { reason?: unknown; message?: unknown };
      const text = typeof cause.reason === 'string' ? cause.reason : cause.message;
      if (typeof text === 'string' && text) parts.push(text);
      break;
    }
    const e = current as Error & { code?: unknown; address?: unknown; port?: unknown };
    let message = e.message.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s'"]*/gi, '<url>');
    // AggregateError (several addresses refused): its errors carry the reason.
    if (!message && Array.isArray((e as unknown as { errors?: unknown[] }).errors)) {
      const first = (e as unknown as { errors: unknown[] }).errors[0];
      message = first ? describeError(first) : e.name;
    }
    // Wrappers that add nothing an operator can use: the failed statement, the pool's "not available".
    const wrapper = e.cause !== undefined && (e.name === 'QueryError' || e.name === 'DependencyUnavailableError');
    if (message && !wrapper && !parts.some((p) => p.includes(message))) parts.push(message);
    current = e.cause;
  }
  return parts.join(': ') || 'unknown error';
}

/** `n thing(s)` in words. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
