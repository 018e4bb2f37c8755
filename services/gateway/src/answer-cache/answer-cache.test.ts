import { describe, expect, it } from 'vitest';
import { AnswerCache, type AnswerCacheEvent } from './answer-cache.domain.ts';

const concerns = (e: AnswerCacheEvent) => {
  if (e.type.startsWith('authPolicy.')) return 'all' as const;
  const d = e.data as { id?: string; identityId?: string };
  return e.type.startsWith('identity.') ? d.id : d.identityId;
};
const make = (maxEntries = 100, now = () => 0) => {
  const c = new AnswerCache({ sources: ['auth', 'pki'], concerns, maxEntries, now });
  c.start();
  return c;
};
const ev = (source: string, sequence: number, type: string, data: unknown): AnswerCacheEvent => ({
  source,
  sequence,
  type,
  data,
});

describe('the gateway answer cache', () => {
  it('serves a kept answer until an event of its identity newer than it arrives', () => {
    const c = make();
    expect(c.fill('i1', 'A', { auth: 10, pki: 3 }, c.ticket())).toBe(true);
    expect(c.get('i1', undefined)).toBe('A');
    // Already reflected (an older or equal position), or another identity: kept.
    c.apply(ev('auth', 10, 'identity.updated', { id: 'i1' }));
    c.apply(ev('auth', 11, 'identity.updated', { id: 'i2' }));
    expect(c.get('i1', undefined)).toBe('A');
    c.apply(ev('pki', 4, 'enrollment.created', { identityId: 'i1' }));
    expect(c.get('i1', undefined)).toBeUndefined();
  });

  it('refuses a fill read before a change it has seen, and accepts one read after', () => {
    const c = make();
    const ticket = c.ticket();
    c.apply(ev('auth', 20, 'authenticator.updated', { identityId: 'i1' }));
    expect(c.fill('i1', 'stale', { auth: 19, pki: 0 }, ticket)).toBe(false);
    expect(c.get('i1', undefined)).toBeUndefined();
    expect(c.fill('i1', 'fresh', { auth: 20, pki: 0 }, c.ticket())).toBe(true);
    expect(c.get('i1', undefined)).toBe('fresh');
    // An older answer never replaces a newer one.
    expect(c.fill('i1', 'older', { auth: 20, pki: 0 }, c.ticket())).toBe(false);
    expect(c.get('i1', undefined)).toBe('fresh');
  });

  it('does not serve a caller whose own write is newer than the answer', () => {
    const c = make();
    c.fill('i1', 'A', { auth: 10, pki: 3 }, c.ticket());
    expect(c.get('i1', { auth: 10, pki: 3, policy: 99 })).toBe('A');
    expect(c.get('i1', { auth: 11 })).toBeUndefined();
    expect(c.get('i1', { pki: 4 })).toBeUndefined();
  });

  it('an event about every identity drops every older answer and refuses older fills', () => {
    const c = make();
    c.fill('i1', 'A', { auth: 10, pki: 0 }, c.ticket());
    c.fill('i2', 'B', { auth: 12, pki: 0 }, c.ticket());
    c.apply(ev('auth', 11, 'authPolicy.updated', { id: 'p' }));
    expect(c.get('i1', undefined)).toBeUndefined();
    expect(c.get('i2', undefined)).toBe('B');
    expect(c.fill('i3', 'C', { auth: 10, pki: 0 }, c.ticket())).toBe(false);
  });

  it('forgets everything on a reset or a gap in positions, and refuses fills begun before', () => {
    const c = make();
    c.apply(ev('auth', 1, 'identity.updated', { id: 'x' }));
    c.fill('i1', 'A', { auth: 5, pki: 0 }, c.ticket());
    const ticket = c.ticket();
    c.apply(ev('auth', 3, 'identity.updated', { id: 'x' })); // 2 was missed
    expect(c.get('i1', undefined)).toBeUndefined();
    expect(c.fill('i1', 'A', { auth: 5, pki: 0 }, ticket)).toBe(false);
    expect(c.fill('i1', 'A', { auth: 5, pki: 0 }, c.ticket())).toBe(true);
    c.reset();
    expect(c.size).toBe(0);
  });

  it('keeps nothing before it follows the events, nor answers without every position', () => {
    const c = new AnswerCache({ sources: ['auth', 'pki'], concerns, maxEntries: 10 });
    expect(c.fill('i1', 'A', { auth: 1, pki: 1 }, c.ticket())).toBe(false);
    c.start();
    expect(c.fill('i1', 'A', { auth: 1 }, c.ticket())).toBe(false);
    expect(c.fill('i1', 'A', { auth: 1, pki: 1 }, c.ticket())).toBe(true);
  });

  it('holds at most maxEntries answers, the oldest fill going first', () => {
    const c = make(2);
    c.fill('a', 'A', { auth: 1, pki: 0 }, c.ticket());
    c.fill('b', 'B', { auth: 1, pki: 0 }, c.ticket());
    c.fill('c', 'C', { auth: 1, pki: 0 }, c.ticket());
    expect([c.get('a', undefined), c.get('b', undefined), c.get('c', undefined)]).toEqual([undefined, 'B', 'C']);
  });

  it('remembers a change long enough to refuse a slow fill, then forgets it', () => {
    let now = 0;
    const c = make(10, () => now);
    c.apply(ev('auth', 5, 'mfa.verified', { identityId: 'i1' }));
    now = 59_000;
    c.apply(ev('auth', 6, 'mfa.verified', { identityId: 'i9' }));
    expect(c.fill('i1', 'stale', { auth: 4, pki: 0 }, c.ticket())).toBe(false);
    now = 61_000;
    c.apply(ev('auth', 7, 'mfa.verified', { identityId: 'i9' }));
    // Past rememberMs no request that began before the change is still waiting: the memory is bounded.
    expect(c.fill('i1', 'x', { auth: 4, pki: 0 }, c.ticket())).toBe(true);
  });
  it('keeps answers per key within an identity, each dropped with the identity', () => {
    const c = make();
    expect(c.fill('i1', 'page1', { auth: 3, pki: 0 }, c.ticket(), '/services?offset=0')).toBe(true);
    expect(c.fill('i1', 'page2', { auth: 3, pki: 0 }, c.ticket(), '/services?offset=100')).toBe(true);
    expect(c.get('i1', undefined, '/services?offset=0')).toBe('page1');
    expect(c.get('i1', undefined, '/services?offset=100')).toBe('page2');
    expect(c.get('i1', undefined, '/services?offset=200')).toBeUndefined();
    expect([c.size, c.count, c.characters]).toEqual([1, 2, 10]);
    c.apply(ev('auth', 4, 'identity.updated', { id: 'i1' }));
    expect(c.get('i1', undefined, '/services?offset=0')).toBeUndefined();
    expect(c.get('i1', undefined, '/services?offset=100')).toBeUndefined();
    expect([c.size, c.count, c.characters]).toEqual([0, 0, 0]);
  });

  it('bounds the answers of one identity and the characters of all', () => {
    const c = new AnswerCache({ sources: ['auth'], concerns, maxEntries: 100, maxKeys: 2, maxChars: 10 });
    c.start();
    for (const k of ['a', 'b', 'c']) c.fill('i1', 'xx', { auth: 1 }, c.ticket(), k);
    expect([c.get('i1', undefined, 'a'), c.get('i1', undefined, 'b'), c.get('i1', undefined, 'c')]).toEqual([
      undefined,
      'xx',
      'xx',
    ]);
    // Over 10 characters: the identity filled least recently goes, never the one just filled.
    c.fill('i2', 'yyyy', { auth: 1 }, c.ticket());
    c.fill('i3', 'zzzz', { auth: 1 }, c.ticket());
    expect([c.get('i1', undefined, 'b'), c.get('i2', undefined), c.get('i3', undefined)]).toEqual([
      undefined,
      'yyyy',
      'zzzz',
    ]);
    expect(c.characters).toBe(8);
    expect(c.fill('i4', 'a very long answer', { auth: 1 }, c.ticket())).toBe(true);
    expect([c.size, c.characters]).toEqual([1, 18]);
  });

  it('after a gap, refuses fills that reflect a position before the missed events', () => {
    const c = make();
    c.apply(ev('auth', 1, 'identity.updated', { id: 'x' }));
    c.apply(ev('auth', 5, 'identity.updated', { id: 'x' })); // 2–4 were missed
    expect(c.fill('i1', 'A', { auth: 3, pki: 0 }, c.ticket())).toBe(false);
    expect(c.fill('i1', 'A', { auth: 4, pki: 0 }, c.ticket())).toBe(true);
  });

  it('a reset that stops serves nothing until started again', () => {
    const c = make();
    c.fill('i1', 'A', { auth: 1, pki: 0 }, c.ticket());
    c.reset(true);
    expect(c.following).toBe(false);
    expect(c.fill('i1', 'A', { auth: 1, pki: 0 }, c.ticket())).toBe(false);
    c.start({ auth: 2, pki: 0 });
    expect(c.fill('i1', 'A', { auth: 1, pki: 0 }, c.ticket())).toBe(false);
    expect(c.fill('i1', 'B', { auth: 2, pki: 0 }, c.ticket())).toBe(true);
    expect(c.get('i1', undefined)).toBe('B');
  });
});
