import { identityState } from '@ziti/contracts';
import { type Database, queryRows } from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OwnerPage, reconcileReadModel } from './read-model-integrity.domain.ts';
import { PgIdentityReadModel } from './read-models.store.ts';
import { identityFixture, policyTestDatabase } from '../../test/support.ts';

/**
 * An integrity fix repairs drift planted at the very position the row was written at (the owner's
 * state at a position is unique, so a differing row there is drift), while an event or page with
 * the same content at the same position changes nothing.
 */
let database: Database;
let drop: () => Promise<void>;

beforeAll(async () => {
  ({ database, drop } = await policyTestDatabase('drift', 4));
});
afterAll(async () => drop?.());

const identity = identityFixture;

async function* pages(...list: OwnerPage[]): AsyncIterable<OwnerPage> {
  yield* list;
}
const parse = (raw: Record<string, unknown>) => {
  const r = identityState.safeParse(raw);
  return r.success ? r.data : null;
};
const row = async (id: string) =>
  (
    await queryRows<{ role_attributes: string[]; deleted: boolean; source_sequence: string }>(
      database.db,
      'select role_attributes, deleted, source_sequence from identities where id = $1',
      [id],
    )
  )[0];

describe('read model drift at the same position', () => {
  it('the same state at the same position is no change; a fix overwrites a differing row and tombstones a ghost', async () => {
    const model = new PgIdentityReadModel(database.db);
    const real = identity('d1', ['a']);
    expect(await model.apply(real, 5, false)).toBe(true);
    expect(await model.apply(real, 5, false)).toBe(false);
    expect(await model.apply(identity('ghost', ['g']), 5, false)).toBe(true);
    // Planted drift, keeping the position.
    await queryRows(
      database.db,
      `update identities set role_attributes = '{planted}', state = jsonb_set(state, '{roleAttributes}', '["planted"]')
        where id = 'd1'`,
    );
    const owner: OwnerPage = { states: [real as unknown as Record<string, unknown>], position: 5 };
    const check = await reconcileReadModel({ entity: 'identity', model, ownerPages: pages(owner), parse, fix: false });
    expect(check.map((r) => [r.description, r.fixed])).toEqual([
      ['identity d1 (n-d1) differs from its owner in roleAttributes', false],
      ['identity ghost (n-ghost) is in the read model but its owner no longer has it', false],
    ]);
    const fix = await reconcileReadModel({ entity: 'identity', model, ownerPages: pages(owner), parse, fix: true });
    expect(fix.every((r) => r.fixed)).toBe(true);
    expect(await row('d1')).toMatchObject({ role_attributes: ['a'], deleted: false });
    expect(await row('ghost')).toMatchObject({ deleted: true });
    expect(
      await reconcileReadModel({ entity: 'identity', model, ownerPages: pages(owner), parse, fix: false }),
    ).toEqual([]);
    // An older event never rolls a row back.
    expect(await model.apply(identity('d1', ['old']), 4, false)).toBe(false);
    expect(await row('d1')).toMatchObject({ role_attributes: ['a'] });
  });
});
