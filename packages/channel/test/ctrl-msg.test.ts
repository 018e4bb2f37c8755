import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createMessage,
  CtrlMsgContentType,
  CtrlMsgHeader,
  decodeCreateCircuitV2Request,
  decodeCreateCircuitV2Response,
  decodeEdgeError,
  decodeMessage,
  decodeRouteResult,
  edge,
  encodeCreateCircuitV2Request,
  encodeCreateCircuitV2Response,
  encodeEdgeError,
  encodeMessage,
  encodeRouteResult,
  isRouteResultPeerDataKey,
  RouteErrorType,
} from '../src/index.ts';
import { expectProtocolError, fromHex, golden, onlyProtocolErrors, toHex, utf8 } from './helpers.ts';

describe('CreateCircuitV2 request (ctrl_msg CreateCircuitRequest, headers only)', () => {
  it('decodes the reference message', () => {
    const msg = decodeMessage(golden('frame.create-circuit-v2-request'));
    expect(msg.contentType).toBe(edge.ContentType.CreateCircuitV2RequestType);
    expect(msg.body.length).toBe(0);
    expect(decodeCreateCircuitV2Request(msg)).toEqual({
      sessionToken: 'sess-tok',
      apiSessionToken: 'api-tok',
      fingerprints: ['0123456789abcdef0123456789abcdef01234567'],
      terminatorInstanceId: '',
      peerData: new Map([[1003, Uint8Array.of(9, 9)]]),
    });
  });

  it('writes all five headers even when empty, like ToMessage', () => {
    const golden0 = decodeMessage(golden('frame.create-circuit-v2-request-minimal'));
    expect([...golden0.headers.entries()].map(([k, v]) => [k, v.length]).sort((a, b) => a[0]! - b[0]!)).toEqual([
      [10, 0],
      [11, 1],
      [12, 0],
      [13, 0],
      [14, 0],
    ]);
    const ours = encodeCreateCircuitV2Request({
      sessionToken: 's',
      apiSessionToken: '',
      fingerprints: [],
      terminatorInstanceId: '',
      peerData: new Map(),
    });
    expect(new Map([...ours.headers].sort(([a], [b]) => a - b))).toEqual(
      new Map([...golden0.headers].sort(([a], [b]) => a - b)),
    );
  });

  it('encodes by hand-derived bytes', () => {
    const msg = encodeCreateCircuitV2Request({
      sessionToken: 'st',
      apiSessionToken: 'at',
      fingerprints: ['f'],
      terminatorInstanceId: 'i',
      peerData: new Map([[1003, Uint8Array.of(7)]]),
    });
    const headers =
      '0b000000 02000000 7374' + // 11 session token
      '0e000000 02000000 6174' + // 14 api session token
      '0c000000 09000000 01000000 01000000 66' + // 12 fingerprints: count 1, "f"
      '0d000000 01000000 69' + // 13 terminator instance id
      '0a000000 0d000000 01000000 eb030000 01000000 07'; // 10 peer data: count 1, key 1003, len 1, 07
    const expected = '0306090c fa4e0000 ffffffff 43000000 00000000' + headers;
    expect(toHex(encodeMessage(msg))).toBe(toHex(fromHex(expected)));
  });

  it('requires the session token, as DecodeCreateCircuitRequest does', () => {
    const msg = createMessage(edge.ContentType.CreateCircuitV2RequestType);
    expectProtocolError(() => decodeCreateCircuitV2Request(msg), 'missing-header');
    msg.headers.set(CtrlMsgHeader.CreateCircuitReqSessionToken, utf8('s'));
    expect(decodeCreateCircuitV2Request(msg)).toEqual({
      sessionToken: 's',
      apiSessionToken: '',
      fingerprints: [],
      terminatorInstanceId: '',
      peerData: new Map(),
    });
    expectProtocolError(() => decodeCreateCircuitV2Request(createMessage(1)), 'unexpected-content-type');
  });

  it('round-trips', () => {
    fc.assert(
      fc.property(
        fc.record({
          sessionToken: fc.string({ minLength: 1 }),
          apiSessionToken: fc.string(),
          fingerprints: fc.array(fc.string(), { maxLength: 5 }),
          terminatorInstanceId: fc.string(),
          peerData: fc
            .array(fc.tuple(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.uint8Array({ maxLength: 40 })), {
              maxLength: 4,
            })
            .map((e) => new Map(e)),
        }),
        (req) => {
          const wire = decodeMessage(encodeMessage(encodeCreateCircuitV2Request(req)));
          expect(decodeCreateCircuitV2Request(wire)).toEqual(req);
        },
      ),
    );
  });
});

describe('CreateCircuitV2 response', () => {
  it('decodes the reference message, a reply carrying replyFor', () => {
    const msg = decodeMessage(golden('frame.create-circuit-v2-response'));
    expect(msg.replyFor).toBe(-1);
    expect(decodeCreateCircuitV2Response(msg)).toEqual({
      circuitId: 'circ-1',
      address: 'ingress-1',
      peerData: new Map([[1003, Uint8Array.of(1)]]),
      tags: new Map([['serviceId', 'svc']]),
    });
  });

  it('replies to the request with its reflected headers', () => {
    const request = createMessage(edge.ContentType.CreateCircuitV2RequestType, undefined, {
      sequence: 31,
      headers: [[128, utf8('uuid')]],
    });
    const res = {
      circuitId: 'c',
      address: 'a',
      peerData: new Map([[1003, Uint8Array.of(1, 2)]]),
      tags: new Map([
        ['serviceId', 's'],
        ['clientId', 'i'],
        ['hostId', 'h'],
      ]),
    };
    const reply = decodeMessage(encodeMessage(encodeCreateCircuitV2Response(res, request)));
    expect(reply.replyFor).toBe(31);
    expect(reply.headers.get(128)).toEqual(utf8('uuid'));
    expect(decodeCreateCircuitV2Response(reply)).toEqual(res);
  });
});

describe('RouteResult (router/handler_ctrl/route.go, controller/handler_ctrl/route_result.go)', () => {
  it('decodes the reference success message with peer data as raw headers', () => {
    const msg = decodeMessage(golden('frame.route-result-success'));
    expect(msg.replyFor).toBe(5);
    expect(decodeRouteResult(msg)).toEqual({
      circuitId: 'circ-1',
      attempt: 2,
      success: true,
      peerData: new Map([[1003, Uint8Array.of(7, 7, 7)]]),
    });
  });

  it('decodes the reference failure message', () => {
    expect(decodeRouteResult(decodeMessage(golden('frame.route-result-failed')))).toEqual({
      circuitId: 'circ-2',
      attempt: 1,
      success: false,
      error: 'dial failed',
      errorCode: RouteErrorType.ConnectionRefused,
      peerData: new Map(),
    });
  });

  it('counts header 1102 as success by its presence alone, like the controller', () => {
    const msg = createMessage(CtrlMsgContentType.RouteResultType, utf8('c'), {
      headers: [
        [CtrlMsgHeader.RouteResultAttempt, Uint8Array.of(0, 0, 0, 0)],
        [CtrlMsgHeader.RouteResultSuccess, Uint8Array.of(0)],
        [CtrlMsgHeader.RouteResultErrorCode, Uint8Array.of()],
      ],
    });
    const rr = decodeRouteResult(msg);
    expect(rr.success).toBe(true);
    expect(rr.errorCode).toBe(0);
  });

  it('requires a 4-byte attempt header', () => {
    const msg = createMessage(CtrlMsgContentType.RouteResultType, utf8('c'));
    expectProtocolError(() => decodeRouteResult(msg), 'missing-header');
    msg.headers.set(CtrlMsgHeader.RouteResultAttempt, Uint8Array.of(1));
    expectProtocolError(() => decodeRouteResult(msg), 'invalid-header-value');
  });

  it('keeps channel headers (replyFor, heartbeats, reflected) out of peer data', () => {
    expect([0, 1, 5, 6, 128, 255, 1101, 1102, 1103, 1104].some(isRouteResultPeerDataKey)).toBe(false);
    expect([1003, 1008, 1011, 1025, 1110, 1111, 1112, 1113, 1114].every(isRouteResultPeerDataKey)).toBe(true);
    expectProtocolError(
      () => encodeRouteResult({ circuitId: 'c', attempt: 0, success: true, peerData: new Map([[5, Uint8Array.of()]]) }),
      'invalid-message',
    );
  });

  it('round-trips as a reply to a Route', () => {
    const route = createMessage(1005, undefined, { sequence: 77 });
    const result = {
      circuitId: 'circ',
      attempt: 3,
      success: false,
      error: 'no terminator',
      errorCode: RouteErrorType.InvalidTerminator,
      peerData: new Map([[1110, utf8('1.2.3.4:5')]]),
    };
    const wire = decodeMessage(encodeMessage(encodeRouteResult(result, route)));
    expect(wire.replyFor).toBe(77);
    expect(decodeRouteResult(wire)).toEqual(result);
  });
});

describe('edge ErrorType reply (handler_edge_ctrl/common.go returnError)', () => {
  it('decodes the reference message: body = message, header 1014 = code', () => {
    expect(decodeEdgeError(decodeMessage(golden('frame.edge-error')))).toEqual({
      message: 'invalid session',
      errorCode: edge.EdgeErrorCode.InvalidSession,
    });
  });

  it('encodes the same bytes', () => {
    const msg = encodeEdgeError({ message: 'invalid session', errorCode: edge.EdgeErrorCode.InvalidSession });
    expect(toHex(encodeMessage(msg))).toBe(toHex(golden('frame.edge-error')));
  });
});

describe('hostile header-only messages', () => {
  it('decode or throw ChannelProtocolError only', () => {
    const keys = [1, 10, 11, 12, 13, 14, 1014, 1101, 1102, 1103, 1104];
    fc.assert(
      fc.property(
        fc.constantFrom(
          edge.ContentType.CreateCircuitV2RequestType,
          edge.ContentType.CreateCircuitV2ResponseType,
          CtrlMsgContentType.RouteResultType,
          edge.ContentType.ErrorType,
        ),
        fc.array(fc.tuple(fc.constantFrom(...keys), fc.uint8Array({ maxLength: 30 })), { maxLength: 8 }),
        fc.uint8Array({ maxLength: 20 }),
        (contentType, headers, body) => {
          const msg = createMessage(contentType, body, { headers });
          onlyProtocolErrors(() => decodeCreateCircuitV2Request(msg));
          onlyProtocolErrors(() => decodeCreateCircuitV2Response(msg));
          onlyProtocolErrors(() => decodeRouteResult(msg));
          onlyProtocolErrors(() => decodeEdgeError(msg));
        },
      ),
      { numRuns: 500 },
    );
  });
});
