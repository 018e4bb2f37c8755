import { type Database, queryRows } from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Session } from '../src/domain/sessions.ts';
import { PgApiSessions, PgSessions } from '../src/store/pg-sessions.ts';
import { policyTestDatabase } from './support.ts';

/**
 * Edge sessions end with their API session whatever the interleaving: a creation racing the end of
 * its API session either comes first (and the end removes it) or is refused; none survives.
 */
let database: Database;
let drop: () => Promise<void>;

beforeAll(async () => {
  ({ database, drop } = await policyTestDatabase('sess'));
});
afterAll(async () => drop?.());

const session = (apiSessionId: string, serviceId = 'svc'): Session => ({
  id: `s-${apiSessionId}-${serviceId}`,
  token: `t-${apiSessionId}-${serviceId}`,
  apiSessionId,
  identityId: 'i1',
  serviceId,
  type: 'Dial',
  tags: {},
  createdAt: new Date(),
  updatedAt: new Date(),
});
const count = async (apiSessionId: string) =>
  Number(
    (
      await queryRows<{ n: number }>(database.db, 'select count(*)::int as n from sessions where api_session_id = $1', [
        apiSessionId,
      ])
    )[0]!.n,
  );

describe('sessions and their API session', () => {
  it('refuses a session for an ended API session and answers the existing one for a repeat', async () => {
    const sessions = new PgSessions(database.db);
    const first = await sessions.createIfLive(session('a1'));
    expect(first).toMatchObject({ id: 's-a1-svc' });
    const again = await sessions.createIfLive({ ...session('a1'), id: 'other', token: 'other' });
    expect(again).toMatchObject({ id: 's-a1-svc', token: 't-a1-svc' });
    await database.transaction((tx) => new PgApiSessions(tx).ended('a1', 'i1', new Date().toISOString()));
    expect(await count('a1')).toBe(0);
    expect(await sessions.createIfLive(session('a1', 'svc2'))).toBe('ended');
    // A late start never reopens it.
    await database.transaction((tx) =>
      new PgApiSessions(tx).started({
        id: 'a1',
        identityId: 'i1',
        authMethod: 'password',
        isMfaRequired: false,
        isMfaComplete: false,
        configTypes: [],
        createdAt: new Date().toISOString(),
      }),
    );
    expect(await sessions.createIfLive(session('a1', 'svc3'))).toBe('ended');
  });

  it('a creation racing the end of its API session never leaves a session behind (200 races)', async () => {
    const sessions = new PgSessions(database.db);
    for (let i = 0; i < 200; i++) {
      const id = `race-${i}`;
      await Promise.all([
        sessions.createIfLive(session(id)),
        database.transaction((tx) => new PgApiSessions(tx).ended(id, 'i1', new Date().toISOString())),
        sessions.createIfLive(session(id, 'svc2')),
      ]);
      expect(await count(id), id).toBe(0);
    }
  });
});
