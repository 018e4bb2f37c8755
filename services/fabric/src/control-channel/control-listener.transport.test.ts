import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { type TLSSocket, connect } from 'node:tls';
import {
  ChannelHeader,
  type ChannelMessage,
  ControlHeader,
  ControllerCapability,
  FrameDecoder,
  capabilitiesHeader,
  decodeHelloResult,
  encodeMessage,
  getHeader,
} from '@ziti/channel';
import type { AdmittableRouter, RouterPresenceReport } from '@ziti/contracts';
import { createControllerPki, issueServerCertificate, loadSigner } from '@ziti/x509';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capturingLogger, routerHello, routerVersion, testLimits, until } from '../../test/channel-harness.ts';
import { RouterConnections, type RouterSynchronizer } from '../routers/router-connections.domain.ts';
import type { RouterLink } from '../routers/router-link.ports.ts';
import type { RouterRegistry } from '../routers/routers.ports.ts';
import { ControlListener, controlAlpn } from './control-listener.transport.ts';
import type { RouterMessages } from './router-messages.transport.ts';

/**
 * The control port over real TLS with a throwaway PKI: a router with its enrollment certificate is
 * admitted and answered as a 1.1.9 router needs (version, capabilities); one refused, or a peer
 * that sends garbage, sees its connection end and the reason is logged once.
 */

interface Cert {
  certPem: string;
  keyPem: string;
  fingerprint: string;
}

let caPem = '';
let routerCert: Cert;
let strangerCert: Cert;
let listener: ControlListener;
let port = 0;
const { logger, lines } = capturingLogger();
const routers = new Map<string, AdmittableRouter>();
const presence: RouterPresenceReport[] = [];

function sha1(certPem: string): string {
  return new X509Certificate(certPem).fingerprint.replaceAll(':', '').toLowerCase();
}

function router(id: string, fingerprint: string | null, o: Partial<AdmittableRouter> = {}): AdmittableRouter {
  return {
    id,
    name: id,
    kind: 'transit',
    fingerprint,
    isVerified: fingerprint !== null,
    disabled: false,
    cost: 0,
    noTraversal: false,
    isTunnelerEnabled: false,
    ...o,
  };
}

beforeAll(async () => {
  const pki = await createControllerPki({ name: 'fabric test' });
  const signer = await loadSigner({ certPem: pki.chainPem, keyPem: pki.intermediate.keyPem });
  caPem = pki.root.certPem;
  const server = await issueServerCertificate(signer, {
    commonName: 'controller',
    ipAddresses: ['127.0.0.1'],
    validityDays: 1,
  });
  const issue = async (signWith: typeof signer, cn: string): Promise<Cert> => {
    const c = await issueServerCertificate(signWith, { commonName: cn, validityDays: 1 });
    return { certPem: c.chainPem, keyPem: c.keyPem, fingerprint: sha1(c.certPem) };
  };
  routerCert = await issue(signer, 'er-1');
  // The same CN from a CA the controller does not trust.
  const otherPki = await createControllerPki({ name: 'elsewhere' });
  strangerCert = await issue(
    await loadSigner({ certPem: otherPki.chainPem, keyPem: otherPki.intermediate.keyPem }),
    'er-1',
  );

  const registry: RouterRegistry = {
    admission: async (id) => routers.get(id) ?? null,
    reportPresence: async (report) => {
      presence.push(report);
      return true;
    },
    renewLeases: async () => [],
  };
  const sync: RouterSynchronizer = {
    synchronize: async () => undefined,
    validateTerminators: async () => undefined,
    disconnected: (_link: RouterLink) => undefined,
  };
  const connections = new RouterConnections(
    registry,
    sync,
    { connected: () => undefined, disconnected: () => undefined },
    { replicaId: 'fabric-test', leaseMs: 30_000, helloTimeoutMs: 1_000 },
    logger,
  );
  const messages = { handle: async () => undefined } as unknown as RouterMessages;
  listener = new ControlListener(
    { certChainPem: server.chainPem, keyPem: server.keyPem, caBundlePem: pki.chainPem },
    connections,
    messages,
    {
      bind: '127.0.0.1',
      port: 0,
      limits: { ...testLimits, helloTimeoutMs: 500 },
      version: { version: 'v1.1.9', revision: 'test', buildDate: '2024-01-01', os: 'linux', arch: 'amd64' },
      controllerId: 'ctrl-test',
      maxConnections: 50,
      handshakeTimeoutMs: 2_000,
    },
    logger,
  );
  port = await listener.start();
});

afterAll(async () => {
  await listener?.stop();
});

interface Dialled {
  socket: TLSSocket;
  received: ChannelMessage[];
  ended: Promise<void>;
}

async function dial(cert?: Cert): Promise<Dialled> {
  const socket = connect({
    host: '127.0.0.1',
    port,
    ca: caPem,
    ALPNProtocols: [controlAlpn],
    ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}),
  });
  socket.on('error', () => undefined);
  await once(socket, 'secureConnect');
  const received: ChannelMessage[] = [];
  const decoder = new FrameDecoder();
  socket.on('data', (chunk: Buffer) => received.push(...decoder.push(chunk)));
  const ended = once(socket, 'close').then(() => undefined);
  return { socket, received, ended };
}

function closeLogs(routerId: string) {
  return lines.filter((l) => l.msg === 'control channel closed' && l.routerId === routerId);
}

describe('ControlListener over TLS', () => {
  it('negotiates ALPN ziti-ctrl', async () => {
    routers.set('er-1', router('er-1', routerCert.fingerprint));
    const peer = await dial(routerCert);
    expect(peer.socket.alpnProtocol).toBe('ziti-ctrl');
    peer.socket.destroy();
    await peer.ended;
  });

  it('admits an enrolled router: the hello answer has success, version, capabilities, ids; it goes online', async () => {
    routers.set('er-1', router('er-1', routerCert.fingerprint));
    presence.length = 0;
    const peer = await dial(routerCert);
    peer.socket.write(encodeMessage(routerHello('er-1')));
    await until(() => peer.received.length > 0, 'the hello answer');
    const answer = peer.received[0]!;
    expect(answer.sequence).toBe(-1);
    const result = decodeHelloResult(answer);
    expect(result).toMatchObject({ success: true, controllerId: 'ctrl-test' });
    expect(result.version).toMatchObject({ version: 'v1.1.9' });
    expect(result.connectionId).not.toBe('');
    expect(getHeader(answer, ControlHeader.Capabilities, capabilitiesHeader)).toEqual(
      new Set([ControllerCapability.CreateTerminatorV2, ControllerCapability.CreateCircuitV2]),
    );
    expect(answer.headers.has(ChannelHeader.HelloVersion)).toBe(true);
    await until(() => presence.some((p) => p.isOnline && p.syncStatus === 'SYNC_DONE'), 'the router online');
    expect(presence[0]).toMatchObject({ routerId: 'er-1', isOnline: true, versionInfo: routerVersion });
    peer.socket.end();
    await peer.ended;
    await until(() => presence.some((p) => !p.isOnline), 'the router offline');
  });

  it.each<[string, () => Cert | undefined, () => AdmittableRouter | null, string, RegExp]>([
    [
      'another certificate than the enrolled one',
      () => routerCert,
      () => router('er-1', 'ab'.repeat(20)),
      'er-1',
      /^router refused: the client certificate is not the one router er-1 enrolled with$/,
    ],
    ['a router whose re-enrollment is pending', () => routerCert, () => router('er-1', null), 'er-1', /enrollment/],
    [
      'a disabled router',
      () => routerCert,
      () => router('er-1', routerCert.fingerprint, { disabled: true }),
      'er-1',
      /disabled/,
    ],
    ['an unknown router', () => routerCert, () => null, 'er-1', /^router refused: no router er-1$/],
    [
      'a certificate of another CA',
      () => strangerCert,
      () => router('er-1', strangerCert.fingerprint),
      'er-1',
      /does not chain/,
    ],
    [
      'a hello naming another router',
      () => routerCert,
      () => router('er-1', routerCert.fingerprint),
      'er-2',
      /hello names router er-2/,
    ],
  ])(
    'refuses %s: the connection ends without an answer, the reason logged once',
    async (_what, cert, record, helloId, reason) => {
      const r = record();
      if (r) routers.set('er-1', r);
      else routers.delete('er-1');
      const before = closeLogs('er-1').length;
      const peer = await dial(cert());
      peer.socket.write(encodeMessage(routerHello(helloId)));
      await peer.ended;
      expect(peer.received).toEqual([]);
      await until(() => closeLogs('er-1').length > before, 'the close to be logged');
      const logged = closeLogs('er-1').slice(before);
      expect(logged).toHaveLength(1);
      expect(logged[0]!.reason).toMatch(reason);
    },
  );

  it('a peer without a client certificate is refused', async () => {
    const peer = await dial();
    peer.socket.write(encodeMessage(routerHello('er-1')));
    await peer.ended;
    expect(peer.received).toEqual([]);
    await until(
      () => lines.some((l) => l.msg === 'control channel closed' && /does not chain/.test(String(l.reason))),
      'the refusal logged',
    );
  });

  it('a peer sending garbage is closed with the framing error logged once', async () => {
    const peer = await dial(routerCert);
    const before = lines.length;
    peer.socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await peer.ended;
    await until(() => lines.slice(before).some((l) => l.msg === 'control channel closed'), 'the close logged');
    const logged = lines.slice(before).filter((l) => l.msg === 'control channel closed');
    expect(logged).toHaveLength(1);
    expect(logged[0]!.reason).toMatch(/^bad frame: bad-magic/);
  });

  it('a peer that never says hello is closed after helloTimeoutMs', async () => {
    const peer = await dial(routerCert);
    const before = lines.length;
    await peer.ended;
    const logged = lines.slice(before).filter((l) => l.msg === 'control channel closed');
    expect(logged.map((l) => l.reason)).toEqual(['no hello in time']);
  });

  it('holds no channel once its peers are gone', async () => {
    await until(() => listener.channels === 0, 'every channel to close');
  });
});

describe('ControlListener: what the close log says', () => {
  it('a peer closed before it said hello is not logged as admitted', async () => {
    const peer = await dial(routerCert);
    const before = lines.length;
    peer.socket.write(Uint8Array.of(0xff));
    await peer.ended;
    await until(() => lines.slice(before).some((l) => l.msg === 'control channel closed'), 'the close logged');
    const logged = lines.slice(before).find((l) => l.msg === 'control channel closed')!;
    // control-listener.transport.ts: `admitted: link !== undefined || !hello` is true without a hello.
    expect(logged.admitted).toBe(false);
  });
});
