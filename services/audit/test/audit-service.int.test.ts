import { ApiError, type EntityOwner, type RequestMeta, maintenanceActions, subjects } from '@ziti/contracts';
import {
  type Database,
  type EventEnvelope,
  InProcessBus,
  type RunnableService,
  createLogger,
  openDatabase,
  serveCalls,
} from '@ziti/platform';
import { listAuditRecordsEnvelope } from '@ziti/contracts/generated/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, waitFor } from '../../../test/support/infra.ts';
import { logOutbox, outboxLog } from '../../../test/support/outbox-log.ts';
import { storeTargets } from '../../../test/support/store-contract.ts';
import { createAuditService } from '../src/app.ts';
import { readAuditConfig } from '../src/config.ts';

/**
 * The audit service as `npm start` composes it (the in-process bus) on Postgres and PGlite, with the four
 * entity owners stood in for by their maintenance calls: it becomes ready once its first resyncs from the
 * owners are done (entity states filled from their pages), makes records from the events published after,
 * one per event however often it is delivered, and answers `management.listAuditRecords`.
 */

const ownerPositions: Record<EntityOwner, number> = { auth: 2, inventory: 0, 'pki-enrollment': 0, policy: 0 };
const admin = { id: 'admin1', name: 'Default Admin' };

function identityState(id: string, name: string) {
  return {
    id,
    name,
    typeId: 'User',
    isAdmin: false,
    isDefaultAdmin: false,
    roleAttributes: [],
    externalId: null,
    authPolicyId: 'default',
    disabled: false,
    disabledAt: null,
    disabledUntil: null,
    tags: {},
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
  };
}

/** The owners' maintenance calls: their positions, and auth's identity page holding the admin. */
function standInOwners(bus: InProcessBus) {
  for (const owner of Object.keys(ownerPositions) as EntityOwner[])
    serveCalls(bus, owner, {
      [maintenanceActions.eventPosition]: async () => ({ position: ownerPositions[owner] }),
      [maintenanceActions.entityStates]: async (request) => {
        const { type } = request as { type: string };
        const states = owner === 'auth' && type === 'identity' ? [identityState(admin.id, admin.name)] : [];
        return { states, position: ownerPositions[owner], more: false };
      },
    });
}

const meta: RequestMeta = {
  requestId: 'rq-1',
  operation: 'management.updateIdentity',
  remoteAddress: '127.0.0.1',
  identityId: admin.id,
  apiSessionId: 'as-1',
};

const envelope = (sequence: number, type: string, data: unknown, m?: RequestMeta): EventEnvelope => ({
  id: `auth:${sequence}`,
  type,
  version: 1,
  source: 'auth',
  sequence,
  occurredAt: new Date(Date.UTC(2026, 0, 2, 0, 0, sequence)).toISOString(),
  data,
  ...(m ? { meta: m } : {}),
});

describe.each(storeTargets)('the audit service on %s', (target) => {
  const bus = new InProcessBus();
  let database: Database;
  let service: RunnableService;
  let dropDatabase = async () => undefined as void;

  const list = async (query: Record<string, unknown> = {}) => {
    const reply = (await bus.request(subjects.operation('audit', 'management', 'listAuditRecords'), {
      requestId: 'list',
      api: 'management',
      operationId: 'listAuditRecords',
      params: {},
      query,
      headers: {},
      remoteAddress: '127.0.0.1',
    })) as { status: number; body: unknown };
    expect(reply.status).toBe(200);
    return listAuditRecordsEnvelope.parse(reply.body);
  };

  beforeAll(async () => {
    if (target === 'postgres') {
      const db = await createTestDatabase('audit_svc');
      database = await openDatabase({ url: db.url, poolSize: 4 });
      dropDatabase = db.drop;
    } else database = await openDatabase({ pgliteMemory: true });
    standInOwners(bus);
    service = createAuditService({
      config: readAuditConfig({ ZITI_ADVERTISED_ADDRESS: 'ctrl.test:1280' }),
      database,
      bus,
      logger: createLogger('audit-test', 'silent'),
      ownsBus: false,
    });
    await service.start();
    await waitFor(() => service.ready(), 'audit to be ready after its first resyncs', 20_000);
    await logOutbox(database);
  });
  afterAll(async () => {
    await service?.stop();
    await dropDatabase();
  });

  it('makes one record of each change after the resync, however often the event arrives', async () => {
    const subject = subjects.event('auth', 'identity.updated');
    // At or below the position the resync started from: the rebuild covered it.
    await bus.publish(subject, envelope(2, 'identity.updated', identityState('old', 'skipped'), meta));
    const created = envelope(3, 'identity.created', identityState('u1', 'alice'), {
      ...meta,
      operation: 'management.createIdentity',
    });
    await bus.publish(subjects.event('auth', 'identity.created'), created);
    await bus.publish(subjects.event('auth', 'identity.created'), created);
    await bus.publish(subject, envelope(4, 'identity.updated', identityState('u1', 'bob'), meta));
    // Logins and derived events make no record.
    await bus.publish(subjects.event('auth', 'apiSession.created'), {
      ...envelope(5, 'apiSession.created', {
        id: 'as-2',
        identityId: 'u1',
        authenticatorId: '',
        authMethod: 'password',
        ipAddress: '127.0.0.1',
        isMfaRequired: false,
        isMfaComplete: false,
        configTypes: [],
        createdAt: '2026-01-02T00:00:05.000Z',
      }),
    });

    const page = await list({ filter: 'actorId = "admin1"' });
    expect(page.data.map((r) => [r.eventId, r.action, r.entityName])).toEqual([
      ['auth:4', 'updated', 'bob'],
      ['auth:3', 'created', 'alice'],
    ]);
    expect(page.data[0]).toMatchObject({
      actorName: admin.name,
      method: 'PUT',
      requestId: 'rq-1',
      remoteAddress: '127.0.0.1',
      apiSessionId: 'as-1',
      changes: { name: { before: 'alice', after: 'bob' } },
    });
    expect(page.meta.pagination).toMatchObject({ totalCount: 2, limit: 10, offset: 0 });
    const published = await outboxLog<{ type: string }>(database, 'type');
    expect(published.map((p) => p.type)).toEqual(['auditRecord.created', 'auditRecord.created']);
  });

  it('answers a bad filter with INVALID_FILTER', async () => {
    const err = await list({ filter: 'actorId ==' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe('INVALID_FILTER');
  });
});

describe('audit configuration', () => {
  it('defaults the retention to 90 days and derives the controller id like auth', () => {
    const config = readAuditConfig({});
    expect(config.retentionDays).toBe(90);
    expect(config.controllerId).toMatch(/^[0-9a-f]{16}$/);
    expect(readAuditConfig({ ZITI_AUDIT_RETENTION_DAYS: '7' }).retentionDays).toBe(7);
  });

  it('refuses a retention that is not a whole number of days from 1', () => {
    for (const bad of ['0', '-1', '1.5', 'x'])
      expect(() => readAuditConfig({ ZITI_AUDIT_RETENTION_DAYS: bad }), bad).toThrow(/ZITI_AUDIT_RETENTION_DAYS/);
  });

  it("reports the event sinks' problems with its own, all at once", () => {
    expect(() => readAuditConfig({ ZITI_AUDIT_RETENTION_DAYS: '0', ZITI_EVENTS_FILE: 'relative.jsonl' })).toThrow(
      /ZITI_AUDIT_RETENTION_DAYS[\s\S]*ZITI_EVENTS_FILE/,
    );
    expect(readAuditConfig({}).sinks.file).toBeUndefined();
  });
});
