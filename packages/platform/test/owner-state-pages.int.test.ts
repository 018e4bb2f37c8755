import { afterAll, describe, expect, it } from 'vitest';
import { infra, uniqueName } from '../../../test/support/infra.ts';
import {
  NatsBus,
  createLogger,
  databaseMaintenance,
  maintenanceHandlers,
  migrate,
  openDatabase,
  ownerEntityStates,
  serveCalls,
} from '../src/index.ts';
import type { Database, Served } from '../src/index.ts';

/**
 * Regression (found in review): `entityStates` pages are 500 states whatever their size, answered in one NATS reply.
 * NATS' default max_payload is 1 MiB, so 500 states of ~2.2 KB (an identity with a few tags and
 * role attributes) cannot be answered: `msg.respond` throws inside a voided promise (an unhandled
 * rejection — fatal to a Node process by default) and the caller waits for its 30 s timeout. A
 * resync (and the integrity check) of such a read model can never complete.
 */
const logger = createLogger('test', 'silent');
const unhandled: unknown[] = [];
const onUnhandled = (err: unknown) => unhandled.push(err);
process.on('unhandledRejection', onUnhandled);

let bus: NatsBus | undefined;
let db: Database | undefined;
let served: Served | undefined;
afterAll(async () => {
  process.off('unhandledRejection', onUnhandled);
  await served?.drain();
  await bus?.close();
  await db?.close();
});

describe('regression: entityStates pages over NATS', () => {
  it('a page of 500 ordinary states reaches the consumer', async () => {
    bus = await NatsBus.connect({ url: infra.natsUrl, name: 'pages', namespace: uniqueName('pg'), logger });
    db = await openDatabase({ pgliteMemory: true });
    await migrate(db, []);
    const state = (i: number) => ({
      id: `identity-${String(i).padStart(4, '0')}`,
      name: `identity ${i}`,
      roleAttributes: Array.from({ length: 20 }, (_, k) => `department-${k}-attribute`),
      tags: Object.fromEntries(Array.from({ length: 70 }, (_, k) => [`tag${k}`, `some tag value ${k}`])),
    });
    served = serveCalls(
      bus,
      'auth',
      maintenanceHandlers(
        databaseMaintenance({
          service: 'auth',
          database: db,
          summaryTables: {},
          entityStates: {
            identity: async (r) =>
              Array.from({ length: 500 }, (_, i) => state(i))
                .filter((s) => r.after === undefined || s.id > r.after)
                .slice(0, r.limit ?? 500),
          },
        }),
      ),
    );
    let error: unknown;
    let states = 0;
    let pages = 0;
    try {
      for await (const page of ownerEntityStates(bus, 'auth', 'identity')) {
        states += page.states.length;
        pages++;
      }
    } catch (err) {
      error = err;
    }
    // Every state arrives, in pages kept under the bus's message size.
    expect({ states, unhandled: unhandled.length, error }).toEqual({ states: 500, unhandled: 0, error: undefined });
    expect(pages).toBeGreaterThan(1);
  }, 60_000);
});
