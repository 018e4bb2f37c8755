import { describe, expect, it } from 'vitest';
import { type WhatIfFacts, type WhatIfNames, answerOf, diffFacts, namedIds } from './what-if-diff.domain.ts';

const facts = (f: Partial<WhatIfFacts>): WhatIfFacts => ({ access: [], routes: [], posture: [], ...f });
const pair = (identityId: string, serviceId: string, dial: boolean, bind: boolean) => ({
  identityId,
  serviceId,
  dial,
  bind,
});
const route = (identityId: string, serviceId: string, edgeRouterId: string) => ({
  identityId,
  serviceId,
  edgeRouterId,
});
const link = (serviceId: string, policyId: string, type: 'Dial' | 'Bind', postureCheckId: string) => ({
  serviceId,
  policyId,
  type,
  postureCheckId,
});

describe('what-if difference', () => {
  it('is empty for equal states, whatever the order and duplicates of the facts', () => {
    const a = facts({
      access: [pair('i1', 's1', true, false), pair('i2', 's1', true, true)],
      routes: [route('i1', 's1', 'r1'), route('i1', 's1', 'r2')],
      posture: [link('s1', 'p1', 'Dial', 'c1')],
    });
    const b = facts({
      access: [pair('i2', 's1', true, true), pair('i1', 's1', true, false), pair('i1', 's1', true, false)],
      routes: [route('i1', 's1', 'r2'), route('i1', 's1', 'r1'), route('i1', 's1', 'r2')],
      posture: [link('s1', 'p1', 'Dial', 'c1'), link('s1', 'p1', 'Dial', 'c1')],
    });
    expect(diffFacts(a, b)).toEqual([]);
  });

  it('tells Dial and Bind gained and lost apart, per service', () => {
    const before = facts({
      access: [pair('i1', 's1', true, false), pair('i2', 's1', false, true), pair('i3', 's2', true, true)],
    });
    const after = facts({
      // i1 keeps Dial and gains Bind; i2 loses Bind and gains Dial; i3 loses everything on s2; i4 gains Dial on s2.
      access: [pair('i1', 's1', true, true), pair('i2', 's1', true, false), pair('i4', 's2', true, false)],
    });
    expect(diffFacts(before, after)).toEqual([
      {
        serviceId: 's1',
        dial: { gained: ['i2'], lost: [] },
        bind: { gained: ['i1'], lost: ['i2'] },
        edgeRouters: [],
        postureChecks: { started: [], stopped: [] },
      },
      {
        serviceId: 's2',
        dial: { gained: ['i4'], lost: ['i3'] },
        bind: { gained: [], lost: ['i3'] },
        edgeRouters: [],
        postureChecks: { started: [], stopped: [] },
      },
    ]);
  });

  it('lists the routers each identity/service pair gains and loses', () => {
    const before = facts({ routes: [route('i1', 's1', 'r1'), route('i1', 's1', 'r2'), route('i2', 's1', 'r1')] });
    const after = facts({ routes: [route('i1', 's1', 'r3'), route('i1', 's1', 'r2'), route('i2', 's1', 'r1')] });
    expect(diffFacts(before, after)).toEqual([
      {
        serviceId: 's1',
        dial: { gained: [], lost: [] },
        bind: { gained: [], lost: [] },
        edgeRouters: [{ identityId: 'i1', gained: ['r3'], lost: ['r1'] }],
        postureChecks: { started: [], stopped: [] },
      },
    ]);
  });

  it('starts and stops posture checks per service, policy and type', () => {
    const before = facts({ posture: [link('s1', 'p1', 'Dial', 'c1'), link('s1', 'p2', 'Dial', 'c2')] });
    // p1 turned Bind: its check stops under Dial and starts under Bind; p2 drops c2 and takes c3.
    const after = facts({ posture: [link('s1', 'p1', 'Bind', 'c1'), link('s1', 'p2', 'Dial', 'c3')] });
    const [s1] = diffFacts(before, after);
    expect(s1!.postureChecks).toEqual({
      started: [
        { policyId: 'p1', type: 'Bind', postureCheckId: 'c1' },
        { policyId: 'p2', type: 'Dial', postureCheckId: 'c3' },
      ],
      stopped: [
        { policyId: 'p1', type: 'Dial', postureCheckId: 'c1' },
        { policyId: 'p2', type: 'Dial', postureCheckId: 'c2' },
      ],
    });
  });

  it('names every id it mentions, once per kind', () => {
    const diffs = diffFacts(
      facts({ access: [pair('i1', 's1', true, false)], routes: [route('i1', 's1', 'r1')] }),
      facts({ access: [pair('i2', 's1', true, false)], posture: [link('s1', 'p1', 'Dial', 'c1')] }),
    );
    const ids = namedIds(diffs);
    expect({ ...ids, identities: ids.identities.sort() }).toEqual({
      identities: ['i1', 'i2'],
      services: ['s1'],
      edgeRouters: ['r1'],
      postureChecks: ['c1'],
      servicePolicies: ['p1'],
    });
  });
});

describe('what-if answer', () => {
  const names: WhatIfNames = {
    identities: new Map([
      ['i1', 'carol'],
      ['i2', 'alice'],
      ['i3', 'bob'],
    ]),
    services: new Map([
      ['s1', 'web'],
      ['s2', 'db'],
    ]),
    edgeRouters: new Map([
      ['r1', 'west'],
      ['r2', 'east'],
    ]),
    postureChecks: new Map([['c1', 'mfa']]),
    servicePolicies: new Map([['p1', 'dial-web']]),
  };
  const diffs = diffFacts(
    facts({ access: [pair('i1', 's2', true, false)], routes: [route('i1', 's2', 'r1')] }),
    facts({
      access: [pair('i1', 's1', true, false), pair('i2', 's1', true, false), pair('i3', 's1', true, false)],
      routes: [route('i1', 's1', 'r1'), route('i1', 's1', 'r2')],
      posture: [link('s1', 'p1', 'Dial', 'c1'), link('s1', 'p9', 'Dial', 'c1')],
    }),
  );

  it('orders services and identities by name, names routers, policies and checks, and counts everything', () => {
    const answer = answerOf(diffs, names, 1000, 2);
    expect(answer.truncated).toBe(false);
    expect(answer.summary).toEqual({
      changes: 2,
      services: 2,
      dialGained: 3,
      dialLost: 1,
      bindGained: 0,
      bindLost: 0,
      edgeRouterPairs: 2,
      edgeRoutersGained: 2,
      edgeRoutersLost: 1,
      postureChecksStarted: 2,
      postureChecksStopped: 0,
    });
    expect(answer.services.map((s) => s.service.name)).toEqual(['db', 'web']);
    const web = answer.services[1]!;
    expect(web.dial.gained.map((i) => i.name)).toEqual(['alice', 'bob', 'carol']);
    expect(web.edgeRouters).toEqual({
      pairs: 1,
      identities: [
        {
          identity: { id: 'i1', name: 'carol' },
          gained: [
            { id: 'r2', name: 'east' },
            { id: 'r1', name: 'west' },
          ],
          lost: [],
        },
      ],
    });
    // A policy whose name is unknown (created and gone) shows its id.
    expect(web.postureChecks.started).toEqual([
      { postureCheck: { id: 'c1', name: 'mfa' }, policy: { id: 'p1', name: 'dial-web' }, policyType: 'Dial' },
      { postureCheck: { id: 'c1', name: 'mfa' }, policy: { id: 'p9', name: 'p9' }, policyType: 'Dial' },
    ]);
  });

  it('lists at most `limit` entries, keeps every count, and says it cut the lists', () => {
    // db (1) + its lost dial (1) + its lost router pair (1 router) = 3; then web (1) and two of its identities.
    const answer = answerOf(diffs, names, 6, 1);
    expect(answer.truncated).toBe(true);
    expect(answer.summary.dialGained).toBe(3);
    const [db, web] = answer.services;
    expect(db!.dial.lost.map((i) => i.name)).toEqual(['carol']);
    expect(db!.edgeRouters.identities).toHaveLength(1);
    expect(web!.dial.gained.map((i) => i.name)).toEqual(['alice', 'bob']);
    expect(web!.dial.gainedCount).toBe(3);
    expect(web!.edgeRouters).toEqual({ pairs: 1, identities: [] });
    expect(web!.postureChecks.started).toEqual([]);
    expect(web!.postureChecks.startedCount).toBe(2);
    // With room for one entry only the first service is listed; the summary still counts both.
    const tiny = answerOf(diffs, names, 1, 1);
    expect(tiny.services.map((s) => s.service.name)).toEqual(['db']);
    expect(tiny.services[0]!.dial.lost).toEqual([]);
    expect(tiny.summary.services).toBe(2);
  });
});
