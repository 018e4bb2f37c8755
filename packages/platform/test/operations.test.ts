import { ApiError, type OperationRequest, authCallContracts, subjects } from '@ziti/contracts';
import { describe, expect, it } from 'vitest';
import { InProcessBus } from '../src/bus/in-process-bus.ts';
import { callHandlers, callService } from '../src/call.ts';
import { createLogger } from '../src/logger.ts';
import { type OperationHandlersPart, notImplemented, reply, serveCalls, serveOperations } from '../src/operations.ts';

const request = (operationId: string, body?: unknown): OperationRequest => ({
  requestId: 'r1',
  api: 'management',
  operationId,
  params: { id: 'i1' },
  query: {},
  ...(body === undefined ? {} : { body }),
  headers: {},
  remoteAddress: '127.0.0.1',
});

describe('serveOperations', () => {
  const logger = createLogger('test', 'silent');

  it('dispatches by key, typed by it; a notImplemented entry answers 501 as a missing one does', async () => {
    const bus = new InProcessBus();
    const handlers: OperationHandlersPart<'auth'> = {
      'management.createIdentity': async (req) => reply.ok({ name: req.body.name, id: req.params.id }),
      'management.deleteIdentity': notImplemented,
    };
    serveOperations(bus, 'auth', handlers, logger);
    const send = (operationId: string, body?: unknown) =>
      bus.request(subjects.operation('auth', 'management', operationId), request(operationId, body));

    await expect(send('createIdentity', { name: 'n', type: 'Default', isAdmin: false })).resolves.toEqual({
      status: 200,
      body: { data: { name: 'n', id: 'i1' }, meta: {} },
    });
    for (const operationId of ['deleteIdentity', 'detailIdentity']) {
      const failure = await send(operationId).catch((err: unknown) => err);
      expect(failure).toBeInstanceOf(ApiError);
      expect((failure as ApiError).code).toBe('NOT_IMPLEMENTED');
      expect((failure as ApiError).cause).toEqual({
        code: 'NOT_IMPLEMENTED',
        message: `management.${operationId} is not implemented`,
      });
    }
    await bus.close();
  });
});

describe('service-to-service calls', () => {
  const errorOf = (p: Promise<unknown>) => p.then(() => undefined).catch((err: unknown) => err as ApiError);

  it('the callee parses the request with the contract, the caller the reply', async () => {
    const bus = new InProcessBus();
    const seen: unknown[] = [];
    let answer: unknown = { identities: [{ id: 'i1', name: 'one', authPolicyId: 'default', extra: 1 }] };
    const table = callHandlers(
      { getIdentities: authCallContracts.getIdentities },
      {
        getIdentities: async (request) => {
          seen.push(request);
          return answer as never;
        },
      },
    );
    serveCalls(bus, 'auth', table);

    await expect(callService(bus, 'auth', authCallContracts.getIdentities, { ids: ['i1'] })).resolves.toEqual({
      identities: [{ id: 'i1', name: 'one', authPolicyId: 'default' }],
    });
    expect(seen).toEqual([{ ids: ['i1'] }]);

    const malformed = await errorOf(bus.request(subjects.call('auth', 'getIdentities'), { ids: 'i1' }));
    expect(malformed).toMatchObject({ code: 'COULD_NOT_VALIDATE' });
    expect(malformed?.cause).toMatchObject({ code: 'COULD_NOT_VALIDATE', message: /^malformed getIdentities request/ });
    expect(seen).toHaveLength(1);

    answer = { identities: 'none' };
    const unexpected = await errorOf(callService(bus, 'auth', authCallContracts.getIdentities, { ids: [] }));
    expect(unexpected).toMatchObject({ code: 'UNHANDLED' });

    const down = await errorOf(callService(bus, 'auth', authCallContracts.createIdentity, {} as never));
    expect(down).toMatchObject({ code: 'NOT_IMPLEMENTED' });
    await bus.close();
    const gone = await errorOf(callService(bus, 'auth', authCallContracts.getIdentities, { ids: [] }));
    expect(gone).toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
  });
});
