import { Writable } from 'node:stream';
import { ApiError } from '@ziti/contracts';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, InProcessBus, createLogger, openDatabase, queryRows, safeError } from '../src/index.ts';
import { createTestDatabase } from '../../../test/support/infra.ts';

/**
 * Issue 12 item 1: a failed statement must not put its bound parameters (or what Postgres echoes
 * of them) in any log line, at any level, whichever way the error reaches the logger.
 */
function capturedLogger(name = 'test') {
  let text = '';
  const sink = new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  });
  return { logger: createLogger(name, 'trace', sink), text: () => text };
}

const secret = 'S3cr3t-Argon-Hash-Value-Nobody-May-Read';

/** Statements that fail with `secret` as a bound parameter, each in a way Postgres echoes values differently. */
const failing: Record<string, (db: Database) => Promise<unknown>> = {
  'unique violation (detail: Key (name)=(…))': (db) =>
    queryRows(db.db, 'insert into secrets (name, hash) values ($1, $2), ($1, $2)', [secret, secret]),
  'invalid uuid (message quotes the value)': (db) => queryRows(db.db, 'select $1::uuid', [secret]),
  'NUL in json (the issue repro: tags with \\u0000)': (db) =>
    queryRows(db.db, 'insert into secrets (name, hash, tags) values ($1, $2, $3::jsonb)', [
      'n1',
      secret,
      JSON.stringify({ x: 'a\u0000b', s: secret }),
    ]),
  'invalid json (where: JSON data, line 1: …)': (db) => queryRows(db.db, 'select $1::jsonb', [`{"k": ${secret}}`]),
  'not-null violation (detail: Failing row contains (…))': (db) =>
    queryRows(db.db, 'insert into secrets (name, hash, tags) values (null, $1, null)', [secret]),
  'drizzle query builder': (db) => db.db.execute(sql`select ${secret}::int`),
  'in a transaction': (db) =>
    db.transaction(async (tx) => {
      await queryRows(tx, 'insert into secrets (name, hash) values ($1, $2)', [`${secret}-tx`, secret]);
      await queryRows(tx, 'insert into secrets (name, hash) values ($1, $2)', [`${secret}-tx`, secret]);
    }),
};

for (const kind of ['postgres', 'pglite'] as const) {
  describe(`no bound parameter reaches a log line (${kind})`, () => {
    let database: Database;
    let drop: (() => Promise<void>) | undefined;
    beforeAll(async () => {
      if (kind === 'postgres') {
        const made = await createTestDatabase('logsec');
        drop = made.drop;
        database = await openDatabase({ url: made.url, poolSize: 2 });
      } else {
        database = await openDatabase({ pgliteMemory: true });
      }
      await queryRows(
        database.db,
        'create table secrets (name text not null unique, hash text not null, tags jsonb not null default $$ {} $$)',
      );
    });
    afterAll(async () => {
      await database?.close();
      await drop?.();
    });

    for (const [name, run] of Object.entries(failing)) {
      it(name, async () => {
        const err = await run(database).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(Error);
        // The raw error carries the statement's parameters or what Postgres echoes of them (a
        // driver's `params`, pg's message, `detail` or `where`)…
        const cause = (err as Error).cause as (Error & { detail?: string; where?: string }) | undefined;
        const raw = JSON.stringify({
          ...(err as object),
          m: (err as Error).message,
          c: cause,
          cm: cause?.message,
          cd: cause?.detail,
          cw: cause?.where,
        });
        expect(raw).toMatch(new RegExp(`${secret.slice(0, 12)}|parameter \\$\\d+ = '`));
        // …and no way of logging it lets it through.
        const { logger, text } = capturedLogger();
        logger.error(err as Error);
        logger.error({ err }, 'statement failed');
        logger.warn({ err, context: { nested: { error: err } } }, 'nested');
        logger.info({ errors: [err] }, 'in a list');
        logger.child({ component: 'x' }).debug({ err: new Error('wrapped', { cause: err }) }, 'as a cause');
        logger.error(new AggregateError([err], 'many'));
        expect(text().split('\n').length).toBeGreaterThan(6);
        expect(text()).not.toContain(secret.slice(0, 12));
        // What is kept is what helps: the SQLSTATE and the statement text.
        const line = JSON.parse(text().split('\n')[1]!);
        expect(JSON.stringify(line.err)).toMatch(/"code":"[0-9A-Z]{5}"/);
      });
    }

    it('a handler failing on the bus logs once, safely, and answers UNHANDLED', async () => {
      const { logger, text } = capturedLogger('bus');
      const bus = new InProcessBus({ logger });
      bus.serve('t.fail', 'q', async () =>
        queryRows(database.db, 'insert into secrets (name, hash) values ($1, $2), ($1, $2)', [secret, secret]),
      );
      const err = await bus.request('t.fail', {}).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).code).toBe('UNHANDLED');
      expect(text()).toContain('request handler failed');
      expect(text().trim().split('\n')).toHaveLength(1);
      expect(text()).not.toContain(secret.slice(0, 12));
      await bus.close();
    });
  });
}

describe('safeError', () => {
  it('keeps the names Postgres gives and drops what echoes values', () => {
    const pg = Object.assign(new Error('duplicate key value violates unique constraint "secrets_name_key"'), {
      code: '23505',
      constraint: 'secrets_name_key',
      table: 'secrets',
      detail: `Key (name)=(${secret}) already exists.`,
      where: `SQL statement with ${secret}`,
      internalQuery: `select '${secret}'`,
      hint: secret,
    });
    const safe = safeError(pg) as Record<string, unknown>;
    expect(safe).toMatchObject({ code: '23505', constraint: 'secrets_name_key', table: 'secrets' });
    expect(safe.message).toBe('duplicate key value violates unique constraint "secrets_name_key"');
    expect(JSON.stringify(safe)).not.toContain(secret);
    const data = safeError(
      Object.assign(new Error(`invalid input syntax for type uuid: "${secret}"`), { code: '22P02' }),
    ) as Record<string, unknown>;
    expect(data.message).toBe('invalid input syntax for type uuid: "…"');
  });
});
