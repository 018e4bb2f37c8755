import { authenticationEventTypes, eventTypes } from '@ziti/contracts';
import { describe, expect, it } from 'vitest';
import { AnswerCache, type AnswerCacheEvent } from './answer-cache.domain.ts';
import { answerConcerns, answerSources } from './answer-concerns.domain.ts';

const ev = (source: string, sequence: number, type: string, data: unknown): AnswerCacheEvent => ({
  source,
  sequence,
  type,
  data,
});

/** A batch of attempts as auth publishes it (docs/adr/0021): one of them by the identity whose answer is kept. */
const attempts = (sequence: number) =>
  ev('auth', sequence, authenticationEventTypes.authenticationAttempted.type, {
    attempts: [
      {
        method: 'password',
        outcome: 'succeeded',
        identityId: 'i1',
        apiSessionId: 's1',
        at: '2026-11-27T10:00:00.000Z',
        meta: { requestId: 'r1', operation: 'client.authenticate', remoteAddress: '127.0.0.1' },
      },
      { method: 'password', outcome: 'failed', reason: 'INVALID_AUTH', at: '2026-11-27T10:00:00.001Z' },
    ],
  });

describe('which kept answers an event of auth concerns', () => {
  it('authentication.attempted concerns none (a login announces what it changes on its own)', () => {
    expect(answerConcerns(attempts(7))).toBeUndefined();
    // What a login changes still drops the identity's answer; a type this build does not know, all.
    expect(answerConcerns(ev('auth', 8, eventTypes.identityUpdated.type, { id: 'i1' }))).toBe('i1');
    expect(answerConcerns(ev('auth', 9, 'somethingNew.happened', {}))).toBe('all');
  });

  it('a storm of attempt batches keeps every answer, and the positions go on', () => {
    const cache = new AnswerCache({ sources: [...answerSources], concerns: answerConcerns, maxEntries: 10 });
    cache.start();
    expect(cache.fill('i1', 'A', { auth: 10, 'pki-enrollment': 0 }, cache.ticket())).toBe(true);
    expect(cache.fill('i2', 'B', { auth: 10, 'pki-enrollment': 0 }, cache.ticket())).toBe(true);
    cache.apply(ev('auth', 10, eventTypes.identityUpdated.type, { id: 'i3' }));
    for (let p = 11; p <= 20; p++) cache.apply(attempts(p));
    expect(cache.get('i1', undefined)).toBe('A');
    expect(cache.get('i2', undefined)).toBe('B');
    // A fill read before the attempts is still taken (they changed nothing), and the next real change still counts.
    expect(cache.fill('i4', 'D', { auth: 12, 'pki-enrollment': 0 }, cache.ticket())).toBe(true);
    cache.apply(ev('auth', 21, eventTypes.identityUpdated.type, { id: 'i1' }));
    expect(cache.get('i1', undefined)).toBeUndefined();
    expect(cache.get('i2', undefined)).toBe('B');
  });
});
