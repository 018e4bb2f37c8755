import { describe, expect, it } from 'vitest';
import {
  ChannelContentType,
  ChannelHeader,
  ControlHeader,
  ControllerCapability,
  createHeartbeat,
  createHelloResult,
  createMessage,
  createPingReply,
  createResult,
  createRouterHello,
  ctrl,
  decodeHelloResult,
  decodeMessage,
  decodeResult,
  decodeRouterHello,
  encodeMessage,
  FrameDecoder,
  getHeartbeat,
  getHeartbeatResponse,
  HELLO_FRAME_LIMITS,
  ResultErrorCode,
  ResultHeader,
  setHeartbeat,
  setHeartbeatResponse,
  uint32Header,
  setHeader,
} from '../src/index.ts';
import { expectProtocolError, golden, toHex, utf8 } from './helpers.ts';

const version = { version: 'v1.1.9', revision: 'abc123', buildDate: '2024-08-01 12:00:00', os: 'linux', arch: 'amd64' };

describe('router hello (router/router.go connectToController)', () => {
  it('decodes the reference hello: id, version, listeners, metadata', () => {
    const decoder = new FrameDecoder({ firstFrameLimits: HELLO_FRAME_LIMITS });
    const [msg] = decoder.push(golden('frame.router-hello'));
    expect(msg!.sequence).toBe(-1);
    const hello = decodeRouterHello(msg!);
    expect(hello.routerId).toBe('router-1');
    expect(hello.version).toEqual(version);
    expect(hello.listeners).toEqual([
      { address: 'tls:127.0.0.1:6004', protocol: 'tls', costTags: ['a'], groups: ['default'], localBinding: '' },
    ]);
    expect(hello.metadata).toEqual({ capabilities: [ctrl.RouterCapability.LinkManagement] });
  });

  it('requires the version header, like handler_ctrl/accept.go', () => {
    const msg = createMessage(ChannelContentType.Hello, utf8('r'));
    expectProtocolError(() => decodeRouterHello(msg), 'missing-header');
    msg.headers.set(ChannelHeader.HelloVersion, utf8('v1.1.9'));
    expectProtocolError(() => decodeRouterHello(msg), 'invalid-version');
    expectProtocolError(() => decodeRouterHello(createMessage(2)), 'unexpected-content-type');
  });

  it('treats absent listeners as none and round-trips what createRouterHello builds', () => {
    const bare = decodeRouterHello(decodeMessage(encodeMessage(createRouterHello({ routerId: 'r', version }))));
    expect(bare.listeners).toEqual([]);
    expect(bare.metadata).toBeUndefined();
    expect(bare.headers.has(ControlHeader.Listeners)).toBe(false);
  });
});

describe('hello result (classic_listener.go ackHello, controller.go Run)', () => {
  it('matches the reference answer header for header', () => {
    const hello = decodeMessage(golden('frame.router-hello'));
    const ours = createHelloResult(hello, {
      connectionId: 'conn-1',
      controllerId: 'ctrl-1',
      version,
      capabilities: Object.values(ControllerCapability),
    });
    const theirs = decodeMessage(golden('frame.hello-result'));
    const sorted = (m: Map<number, Uint8Array>) => new Map([...m].sort(([a], [b]) => a - b));
    const wire = decodeMessage(encodeMessage(ours));
    expect(wire.contentType).toBe(theirs.contentType);
    expect(wire.sequence).toBe(-1);
    expect(wire.replyFor).toBe(-1);
    expect(sorted(wire.headers)).toEqual(sorted(theirs.headers));
    expect(wire.body).toEqual(theirs.body);
    expect(toHex(theirs.headers.get(ControlHeader.Capabilities)!)).toBe('0e');
  });

  it('decodes as the router reads it', () => {
    expect(decodeHelloResult(decodeMessage(golden('frame.hello-result')))).toEqual({
      success: true,
      message: '',
      connectionId: 'conn-1',
      controllerId: 'ctrl-1',
      version,
      capabilities: new Set([1, 2, 3]),
    });
  });

  it('leaves out the capabilities header when not given (the router then uses V1 messages)', () => {
    const result = createHelloResult(createRouterHello({ routerId: 'r', version }), {
      connectionId: 'c',
      controllerId: 'x',
      version,
    });
    expect(result.headers.has(ControlHeader.Capabilities)).toBe(false);
  });

  it('rejects a Result that answers another request', () => {
    const other = createResult(true, '', createMessage(1, undefined, { sequence: 3 }));
    expectProtocolError(() => decodeHelloResult(other), 'unexpected-content-type');
  });
});

describe('results, pings, heartbeats', () => {
  it('a Result is header 2 = success and the message as body', () => {
    const msg = createResult(false, 'server too busy', createMessage(1038, undefined, { sequence: 8 }));
    setHeader(msg, ResultHeader.ErrorCode, uint32Header, ResultErrorCode.RateLimited);
    expect(decodeResult(decodeMessage(encodeMessage(msg)))).toEqual({
      success: false,
      message: 'server too busy',
      errorCode: 1,
    });
    expect(msg.replyFor).toBe(8);
  });

  it('a Ping is answered with Result "ok" (controller/handler_ctrl/ping.go)', () => {
    const reply = createPingReply(createMessage(ChannelContentType.Ping, undefined, { sequence: 4 }));
    expect(reply.replyFor).toBe(4);
    expect(decodeResult(reply)).toEqual({ success: true, message: 'ok' });
  });

  it('heartbeats ride as uint64 headers 5 and 6', () => {
    const hb = createHeartbeat();
    expect(hb.contentType).toBe(5);
    setHeartbeat(hb, 1700000000123456789n);
    setHeartbeatResponse(hb, 42n);
    const wire = decodeMessage(encodeMessage(hb));
    expect(getHeartbeat(wire)).toBe(1700000000123456789n);
    expect(getHeartbeatResponse(wire)).toBe(42n);
    expect(getHeartbeat(decodeMessage(golden('frame.heartbeat')))).toBe(1700000000123456789n);
  });
});
