import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ctrl, decodeProtoMessage, defineMessage, edge, field, type MessageType, protoMessage } from '../src/index.ts';
import {
  expectProtocolError,
  fromHex,
  golden,
  goReference,
  messageArbitrary,
  onlyProtocolErrors,
  toHex,
  utf8,
} from './helpers.ts';

const b = (...bytes: number[]): Uint8Array => Uint8Array.from(bytes);

const listener: ctrl.Listener = {
  address: 'tls:127.0.0.1:6004',
  protocol: 'tls',
  costTags: ['a'],
  groups: ['default'],
  localBinding: '',
};

/** The values the Go program marshalled, field for field (see the fixture's source). */
const goldens: [string, MessageType<never>, unknown][] = (
  [
    [
      'Route',
      ctrl.Route,
      ctrl.Route.create({
        circuitId: 'circ-1',
        attempt: 1,
        egress: {
          binding: 'edge',
          address: 'egress-1',
          destination: 'term-1',
          peerData: new Map([
            [1003, b(1, 2)],
            [1011, b()],
          ]),
        },
        forwards: [
          { srcAddress: 'ingress-1', dstAddress: 'egress-1', dstType: ctrl.DestType.End },
          { srcAddress: 'egress-1', dstAddress: 'ingress-1', dstType: ctrl.DestType.Start },
        ],
        context: {
          fields: new Map([
            ['circuitId', 'circ-1'],
            ['attemptNumber', '1'],
          ]),
          channelMask: 3,
        },
        timeout: 9999000000n,
        tags: new Map([
          ['serviceId', 'svc'],
          ['clientId', 'id-1'],
          ['hostId', 'id-2'],
        ]),
      }),
    ],
    ['Route-empty-egress', ctrl.Route, ctrl.Route.create({ circuitId: 'c', egress: ctrl.RouteEgress.create() })],
    ['Unroute', ctrl.Unroute, { circuitId: 'circ-1', now: true }],
    ['Fault', ctrl.Fault, { subject: ctrl.FaultSubject.EgressFault, id: 'circ-1', iteration: 0 }],
    ['Fault-link', ctrl.Fault, { subject: ctrl.FaultSubject.LinkDuplicate, id: 'l', iteration: 4 }],
    ['RemoveTerminatorsRequest', ctrl.RemoveTerminatorsRequest, { terminatorIds: ['t1', 't2'] }],
    ['Listeners', ctrl.Listeners, { listeners: [listener] }],
    ['RouterMetadata', ctrl.RouterMetadata, { capabilities: [ctrl.RouterCapability.LinkManagement] }],
    [
      'Settings',
      ctrl.Settings,
      {
        data: new Map([
          [ctrl.SettingTypes.NewCtrlAddress, utf8('tls:ctrl:6262')],
          [0, b()],
          [-5, b(1)],
        ]),
      },
    ],
    [
      'UpdateCtrlAddresses',
      ctrl.UpdateCtrlAddresses,
      { addresses: ['tls:a:1', 'tls:b:2'], index: 2n ** 64n - 1n, isLeader: true },
    ],
    [
      'RouterLinks',
      ctrl.RouterLinks,
      {
        links: [
          {
            id: 'l1',
            destRouterId: 'r2',
            linkProtocol: 'tls',
            linkCostTags: ['x', 'y'],
            dialAddress: 'tls:r2:6004',
            iteration: 3,
          },
        ],
      },
    ],
    [
      'LinkConnected',
      ctrl.LinkConnected,
      { id: 'l1', conns: [{ id: 'c1', localAddr: '1.2.3.4:5', remoteAddr: '6.7.8.9:10' }] },
    ],
    ['VerifyRouter', ctrl.VerifyRouter, { routerId: 'r1', fingerprints: ['aa', 'bb'] }],
    [
      'PeerStateChanges',
      ctrl.PeerStateChanges,
      { changes: [{ id: 'r2', version: 'v1.1.9', state: ctrl.PeerState.Removed, listeners: [listener] }] },
    ],
    [
      'ValidateTerminatorsV2Request',
      ctrl.ValidateTerminatorsV2Request,
      { terminators: [{ id: 't1', binding: 'edge', address: 't1', marker: 77n }], fixInvalid: true },
    ],
    [
      'ValidateTerminatorsV2Response',
      ctrl.ValidateTerminatorsV2Response,
      {
        states: new Map([
          ['t1', { valid: true, reason: 0, detail: 'ok', marker: 1n }],
          ['t0', { valid: false, reason: ctrl.TerminatorInvalidReason.BadState, detail: '', marker: 0n }],
          ['t2', ctrl.RouterTerminatorState.create()],
        ]),
      },
    ],
    ['CircuitRequest', ctrl.CircuitRequest, { ingressId: 'i', service: 's', peerData: new Map([[1, b(2)]]) }],
    [
      'CircuitConfirmation',
      ctrl.CircuitConfirmation,
      {
        circuitIds: ['c1', 'c2'],
        idleTimes: new Map([
          ['c1', 100n],
          ['c2', -1n],
        ]),
      },
    ],
    [
      'Dial',
      ctrl.Dial,
      { linkId: 'l', address: 'tls:x:1', routerId: 'r', linkProtocol: 'tls', routerVersion: 'v1.1.9' },
    ],
    [
      'UpdateTerminatorRequest-ctrl',
      ctrl.UpdateTerminatorRequest,
      {
        terminatorId: 't',
        updatePrecedence: true,
        updateCost: false,
        precedence: ctrl.TerminatorPrecedence.Failed,
        cost: 65535,
      },
    ],
    [
      'ServerHello',
      edge.ServerHello,
      {
        version: 'v1.1.9',
        data: new Map([
          ['instant', 'true'],
          ['routerModel', 'true'],
        ]),
        byteData: new Map(),
      },
    ],
    [
      'ClientHello',
      edge.ClientHello,
      {
        version: 'v1.1.9',
        hostname: 'er1.example',
        protocols: ['tls'],
        data: new Map(),
        protocolPorts: ['3022'],
        listeners: [
          {
            address: { value: 'tls:0.0.0.0:3022', protocol: 'tls', hostname: '0.0.0.0', port: 3022 },
            advertise: { value: 'tls:er1.example:3022', protocol: 'tls', hostname: 'er1.example', port: -1 },
          },
        ],
      },
    ],
    [
      'ApiSessionAdded',
      edge.ApiSessionAdded,
      {
        isFullState: true,
        apiSessions: [
          { token: 'tok-1', certFingerprints: ['fp1', 'fp2'], id: 'as-1' },
          { token: 'tok-2', certFingerprints: [], id: 'as-2' },
        ],
      },
    ],
    [
      'ApiSessionUpdated',
      edge.ApiSessionUpdated,
      { apiSessions: [{ token: 'tok-1', certFingerprints: ['fp3'], id: 'as-1' }] },
    ],
    ['ApiSessionRemoved', edge.ApiSessionRemoved, { tokens: ['tok-1'], ids: ['as-1'] }],
    ['ApiSessionHeartbeat', edge.ApiSessionHeartbeat, { tokens: ['tok-1', 'tok-2'] }],
    ['SessionRemoved', edge.SessionRemoved, { tokens: ['st'], ids: ['s-1'] }],
    ['RequestClientReSync', edge.RequestClientReSync, { reason: 'api session sync timeout' }],
    [
      'CreateTerminatorV2Request',
      edge.CreateTerminatorV2Request,
      {
        address: 'term-1',
        sessionToken: 'st',
        fingerprints: ['fp'],
        peerData: new Map([[1003, b(5, 6)]]),
        cost: 10,
        precedence: edge.TerminatorPrecedence.Required,
        instanceId: 'inst',
        instanceSecret: b(1, 2),
        apiSessionToken: 'at',
      },
    ],
    [
      'CreateTerminatorV2Response',
      edge.CreateTerminatorV2Response,
      {
        terminatorId: 'term-1',
        result: edge.CreateTerminatorResult.FailedInvalidSession,
        msg: 'invalid session',
      },
    ],
    [
      'CreateTerminatorV2Response-success',
      edge.CreateTerminatorV2Response,
      { terminatorId: 'term-1', result: edge.CreateTerminatorResult.Success, msg: '' },
    ],
    [
      'CreateTerminatorRequest',
      edge.CreateTerminatorRequest,
      {
        sessionToken: 'st',
        fingerprints: ['fp'],
        peerData: new Map([[1, b()]]),
        cost: 1,
        precedence: edge.TerminatorPrecedence.Failed,
        instanceId: 'i',
        instanceSecret: b(3),
        apiSessionToken: 'at',
      },
    ],
    [
      'RemoveTerminatorRequest',
      edge.RemoveTerminatorRequest,
      { sessionToken: 'st', fingerprints: ['fp'], terminatorId: 't', apiSessionToken: 'at' },
    ],
    [
      'UpdateTerminatorRequest',
      edge.UpdateTerminatorRequest,
      {
        sessionToken: 'st',
        fingerprints: ['fp'],
        terminatorId: 't',
        cost: 7,
        precedence: edge.TerminatorPrecedence.Required,
        updatePrecedence: true,
        updateCost: true,
        apiSessionToken: 'at',
      },
    ],
    ['Error', edge.Error, { code: 'C', message: 'm', cause: 'c' }],
    ['ValidateSessionsRequest', edge.ValidateSessionsRequest, { sessionTokens: ['a', 'b'] }],
    [
      'HealthEventRequest',
      edge.HealthEventRequest,
      { sessionToken: 'st', fingerprints: ['fp'], terminatorId: 't', checkPassed: true, apiSessionToken: 'at' },
    ],
    [
      'CreateCircuitRequest',
      edge.CreateCircuitRequest,
      {
        sessionToken: 'st',
        fingerprints: ['fp'],
        terminatorInstanceId: 'ti',
        peerData: new Map([
          [1003, b(1)],
          [1008, utf8('caller')],
        ]),
        apiSessionToken: 'at',
      },
    ],
    [
      'CreateCircuitResponse',
      edge.CreateCircuitResponse,
      {
        circuitId: 'c',
        address: 'a',
        peerData: new Map([[1003, b(2)]]),
        tags: new Map([
          ['hostId', 'h'],
          ['clientId', 'c'],
        ]),
      },
    ],
  ] as [string, MessageType<unknown>, unknown][]
).map(([n, t, v]) => [n, t as MessageType<never>, v]);

describe('protobuf messages against the Go reference (Deterministic marshal)', () => {
  it('cover every golden in the fixture', () => {
    const names = Object.keys(goReference.hex)
      .filter((k) => k.startsWith('pb.'))
      .map((k) => k.slice(3))
      .sort();
    expect(goldens.map(([n]) => n).sort()).toEqual(names);
  });

  it.each(goldens)('%s encodes to the reference bytes and decodes back', (name, type, value) => {
    const bytes = golden(`pb.${name}`);
    expect(toHex(type.encode(value as never))).toBe(toHex(bytes));
    expect(type.decode(bytes)).toEqual(value);
  });
});

describe('encoding rules (hand-derived)', () => {
  it('omits zero scalars and writes present sub-messages even when empty', () => {
    // circuitId "c" (0a 01 63), egress {} (1a 00)
    expect(toHex(ctrl.Route.encode(ctrl.Route.create({ circuitId: 'c', egress: ctrl.RouteEgress.create() })))).toBe(
      '0a01631a00',
    );
    expect(toHex(ctrl.Route.encode(ctrl.Route.create()))).toBe('');
  });

  it('packs repeated enums: RouterMetadata{capabilities:[1, 0]} = 0a 02 01 00', () => {
    expect(toHex(ctrl.RouterMetadata.encode({ capabilities: [1, 0] }))).toBe('0a020100');
  });

  it('writes every map entry with key and value, ordered by key', () => {
    // peerData {1003: []} -> 0a 05 (08 eb07) (12 00)
    expect(toHex(ctrl.CircuitRequest.encode(ctrl.CircuitRequest.create({ peerData: new Map([[1003, b()]]) })))).toBe(
      '1a0508eb071200',
    );
    const tags = new Map([
      ['b', ''],
      ['a', ''],
    ]);
    expect(toHex(ctrl.Route.encode(ctrl.Route.create({ tags })))).toBe('3a050a01611200' + '3a050a01621200');
  });

  it('refuses values the field cannot carry', () => {
    expectProtocolError(() => ctrl.Fault.encode({ subject: 0, id: 'x', iteration: -1 }), 'invalid-message');
    expectProtocolError(() => ctrl.Route.encode(ctrl.Route.create({ timeout: -1n })), 'invalid-message');
    expectProtocolError(
      () => ctrl.Unroute.encode({ circuitId: 5 as unknown as string, now: false }),
      'invalid-message',
    );
    expectProtocolError(() => ctrl.Unroute.encode({ circuitId: '\udc00', now: false }), 'invalid-message');
  });
});

describe('decoding rules (protobuf-go behaviour, recorded from the reference)', () => {
  it('merges a repeated singular sub-message', () => {
    expect(goReference.facts['pbread.merged-egress']).toBe('ok: {"egress":{"binding":"a","address":"b"}}');
    const route = ctrl.Route.decode(fromHex('1a030a0161 1a03120162'));
    expect(route.egress).toEqual({ binding: 'a', address: 'b', destination: '', peerData: new Map() });
  });

  it('fills a missing map key or value with its zero value', () => {
    expect(goReference.facts['pbread.map-entry-empty']).toBe('ok: {"peerData":{"0":null}}');
    expect(goReference.facts['pbread.map-entry-missing-value']).toBe('ok: {"peerData":{"1001":null}}');
    expect(ctrl.CircuitRequest.decode(fromHex('1a00')).peerData).toEqual(new Map([[0, b()]]));
    expect(ctrl.CircuitRequest.decode(fromHex('1a0308e907')).peerData).toEqual(new Map([[1001, b()]]));
    expect(ctrl.ValidateTerminatorsV2Response.decode(fromHex('0a030a0161')).states).toEqual(
      new Map([['a', ctrl.RouterTerminatorState.create()]]),
    );
  });

  it('keeps the last of a repeated map key', () => {
    expect(goReference.facts['pbread.map-duplicate-key']).toBe('ok: {"peerData":{"1001":"Ag=="}}');
    expect(ctrl.CircuitRequest.decode(fromHex('1a0608e907120101 1a0608e907120102')).peerData).toEqual(
      new Map([[1001, b(2)]]),
    );
  });

  it('accepts packed and unpacked repeated numerics mixed', () => {
    expect(goReference.facts['pbread.packed-unpacked-mix']).toBe('ok: {"capabilities":[1,1,0]}');
    expect(ctrl.RouterMetadata.decode(fromHex('0801 0a020100')).capabilities).toEqual([1, 1, 0]);
  });

  it('reads any non-zero varint as true', () => {
    expect(goReference.facts['pbread.bool-2']).toBe('ok: {"now":true}');
    expect(ctrl.Unroute.decode(fromHex('1002')).now).toBe(true);
  });

  it('keeps unknown enum values (proto3 enums are open)', () => {
    expect(ctrl.Fault.decode(fromHex('0863')).subject).toBe(99);
  });

  it('rejects a packed run that ends inside a value', () => {
    expectProtocolError(() => ctrl.RouterMetadata.decode(fromHex('0a0180')), 'protobuf-truncated');
  });

  it('bounds how many elements one decode may create', () => {
    const many = new Uint8Array(2 * 1000);
    for (let i = 0; i < many.length; i += 2) many[i] = 0x0a; // 1000 empty listeners
    expect(ctrl.Listeners.decode(many).listeners).toHaveLength(1000);
    expectProtocolError(() => ctrl.Listeners.decode(many, { maxElements: 999 }), 'protobuf-too-large');
  });
});

describe('protobuf bodies in channel messages', () => {
  it('carry the content type of the message type', () => {
    const msg = protoMessage(ctrl.Unroute, { circuitId: 'c', now: true }, { sequence: 4 });
    expect(msg.contentType).toBe(ctrl.ContentType.UnrouteType);
    expect(msg.sequence).toBe(4);
    expect(decodeProtoMessage(ctrl.Unroute, msg)).toEqual({ circuitId: 'c', now: true });
    expectProtocolError(() => decodeProtoMessage(ctrl.Fault, msg), 'unexpected-content-type');
  });

  it('need an explicit content type for types without one', () => {
    expectProtocolError(() => protoMessage(ctrl.Listeners, { listeners: [] }), 'invalid-message');
    expect(protoMessage(ctrl.Listeners, { listeners: [] }, { contentType: 77 }).contentType).toBe(77);
  });

  it('use the reference content types', () => {
    expect(edge.ContentType.CreateCircuitV2RequestType).toBe(20218);
    expect(edge.CreateTerminatorV2Request.contentType).toBe(20216);
    expect(edge.ClientHello.contentType).toBe(20001);
    expect(ctrl.Route.contentType).toBe(1005);
    expect(ctrl.PeerStateChanges.contentType).toBe(1050);
    expect(ctrl.RemoveTerminatorsRequest.contentType).toBe(1038);
  });
});

function messageTypes(ns: Record<string, unknown>): [string, MessageType<never>][] {
  return Object.entries(ns)
    .filter(([, v]) => typeof v === 'object' && v !== null && 'fields' in v && 'decodeWith' in v)
    .map(([k, v]) => [k, v as MessageType<never>]);
}

const allTypes = [
  ...messageTypes(ctrl as unknown as Record<string, unknown>).map(([k, v]) => [`ctrl.${k}`, v] as const),
  ...messageTypes(edge as unknown as Record<string, unknown>).map(([k, v]) => [`edge.${k}`, v] as const),
];

describe('every message type', () => {
  it('is covered', () => {
    expect(allTypes.length).toBeGreaterThanOrEqual(50);
  });

  it.each(allTypes)('%s round-trips any value and re-encodes canonically', (_name, type) => {
    fc.assert(
      fc.property(messageArbitrary(type), (value) => {
        const bytes = type.encode(value);
        const decoded = type.decode(bytes);
        expect(decoded).toEqual(type.create(value));
        expect(toHex(type.encode(decoded))).toBe(toHex(bytes));
      }),
      { numRuns: 100 },
    );
  });

  it.each(allTypes)('%s decodes hostile bytes to a value or ChannelProtocolError only', (_name, type) => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 120 }),
          // a valid encoding, then truncated and with bytes flipped
          fc
            .tuple(messageArbitrary(type), fc.nat(), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 }))))
            .map(([value, cut, flips]) => {
              const bytes = type.encode(value);
              for (const [at, x] of flips) if (bytes.length > 0) bytes[at % bytes.length]! ^= x;
              return bytes.subarray(0, cut % (bytes.length + 1));
            }),
        ),
        (bytes) => {
          onlyProtocolErrors(() => type.decode(bytes, { maxElements: 10_000 }));
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('MetricsMessage (the part the controller reads)', () => {
  // The fuller shape a router sends (metrics_pb.MetricsMessage): the fields the controller does not
  // read are skipped, the histograms' means are read.
  const FullHistogram = defineMessage<{ count: bigint; max: bigint; mean: number; min: bigint; p50: number }>(
    'ziti.metrics.pb.MetricsMessage.Histogram',
    {
      count: field.int64(1),
      max: field.int64(2),
      mean: field.scalar(3, 'double'),
      min: field.int64(4),
      p50: field.scalar(7, 'double'),
    },
  );
  const Full = defineMessage<{
    eventId: string;
    sourceId: string;
    tags: Map<string, string>;
    intValues: Map<string, bigint>;
    histograms: Map<string, { count: bigint; max: bigint; mean: number; min: bigint; p50: number }>;
    doNotPropagate: boolean;
  }>('ziti.metrics.pb.MetricsMessage', {
    eventId: field.string(1),
    sourceId: field.string(2),
    tags: field.map(4, 'string', 'string'),
    intValues: field.map(5, 'string', 'int64'),
    histograms: field.messageMap(8, 'string', FullHistogram),
    doNotPropagate: field.bool(12),
  });

  it('reads each histogram mean and skips the rest', () => {
    const bytes = Full.encode({
      eventId: 'e1',
      sourceId: 'router-1',
      tags: new Map([['a', 'b']]),
      intValues: new Map([['x', 7n]]),
      histograms: new Map([
        ['link.ab.latency', { count: 3n, max: 9n, mean: 2_500_000.5, min: 1n, p50: 2.0 }],
        ['link.ab.queue_time', { count: 3n, max: 9n, mean: 10, min: 1n, p50: 2.0 }],
      ]),
      doNotPropagate: true,
    });
    const m = ctrl.MetricsMessage.decode(bytes);
    expect(m.sourceId).toBe('router-1');
    expect(m.histograms.get('link.ab.latency')).toEqual({ count: 3n, mean: 2_500_000.5 });
    expect(m.histograms.get('link.ab.queue_time')?.mean).toBe(10);
  });
});
