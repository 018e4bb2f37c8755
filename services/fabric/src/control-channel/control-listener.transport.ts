import { createHash } from 'node:crypto';
import type { Socket } from 'node:net';
import { type Server, type TLSSocket, createServer } from 'node:tls';
import {
  type ChannelMessage,
  ControllerCapability,
  createHelloResult,
  decodeRouterHello,
  isChannelProtocolError,
} from '@ziti/channel';
import type { RouterVersionInfo } from '@ziti/contracts';
import { type Logger, clientCertificateChain, routerEdgeMetrics } from '@ziti/platform';
import { verifyChain } from '@ziti/x509';
import type { RouterConnections } from '../routers/router-connections.domain.ts';
import { ChannelRouterLink } from './channel-router-link.transport.ts';
import { type ChannelLimits, RouterChannel } from './router-channel.transport.ts';
import type { RouterMessages } from './router-messages.transport.ts';

/** The TLS identity the control port serves (the controller's server certificate) and the CA routers chain to. */
export interface ControlTls {
  certChainPem: string;
  keyPem: string;
  /** The controller PKI's CA bundle: a router's client certificate must chain to it. */
  caBundlePem: string;
}

export interface ControlListenerOptions {
  bind: string;
  port: number;
  limits: ChannelLimits;
  /** What routers are told the controller is (the hello answer's version header). */
  version: RouterVersionInfo;
  controllerId: string;
  /** Connections held at once, admitted or not (a flood of TLS handshakes is bounded). */
  maxConnections: number;
  /** TLS handshakes that take longer are dropped. */
  handshakeTimeoutMs: number;
}

/** The application protocol routers offer (ROUTER-FACTS §1). */
export const controlAlpn = 'ziti-ctrl';

/**
 * The control port: a TLS listener that asks every peer for a client certificate, then reads the
 * router's hello and lets inventory's record of the router decide admission (`RouterConnections`).
 * A refused router's connection is closed with its reason logged once; the router sees EOF, as
 * with the reference. Connections can also be handed over already decrypted (`accept`) by another
 * listener that took them for this protocol (the API port's ALPN `ziti-ctrl`).
 */
export class ControlListener {
  private server?: Server;
  private readonly open = new Set<RouterChannel>();
  private readonly roots: string[];

  constructor(
    private readonly tls: ControlTls,
    private readonly connections: RouterConnections,
    private readonly messages: RouterMessages,
    private readonly options: ControlListenerOptions,
    private readonly logger: Logger,
  ) {
    this.roots = tls.caBundlePem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  }

  async start(): Promise<number> {
    const server = createServer(
      {
        cert: this.tls.certChainPem,
        key: this.tls.keyPem,
        // The chain is verified against the controller's CA bundle at admission, for connections of
        // this port and those the API port hands over alike.
        requestCert: true,
        rejectUnauthorized: false,
        ALPNProtocols: [controlAlpn],
        minVersion: 'TLSv1.2',
        handshakeTimeout: this.options.handshakeTimeoutMs,
      },
      (socket) => this.accept(socket),
    );
    server.maxConnections = this.options.maxConnections;
    server.on('tlsClientError', (err: Error, socket: Socket) => {
      this.logger.debug({ err: err.message, remote: socket.remoteAddress }, 'a control-channel TLS handshake failed');
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port, this.options.bind, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address();
    return typeof address === 'object' && address ? address.port : this.options.port;
  }

  /**
   * A TLS connection for the control protocol: from this listener, or handed over once its TLS was
   * done by the API port with the same certificate and CA (`npm start`, ALPN `ziti-ctrl`).
   */
  accept(socket: TLSSocket): void {
    // Request and reply are small messages: sent at once, not held back for Nagle's algorithm.
    socket.setNoDelay(true);
    const remote = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`;
    const chainPem = clientCertificateChain(socket);
    const peer = socket.getPeerX509Certificate();
    const fingerprint = peer ? createHash('sha1').update(peer.raw).digest('hex') : null;
    const commonName = peer ? commonNameOf(peer.subject) : null;
    let link: ChannelRouterLink | undefined;
    const channel: RouterChannel = new RouterChannel(
      socket,
      this.options.limits,
      {
        hello: (msg) => {
          void this.admit(channel, msg, { chainPem, remote, fingerprint, commonName }, (admitted) => {
            link = admitted;
          });
        },
        message: async (msg) => {
          if (link) await this.messages.handle(link, msg);
        },
        closed: (reason) => {
          this.open.delete(channel);
          const routerId = link?.routerId ?? commonName ?? undefined;
          routerEdgeMetrics().closes.inc({ admitted: String(link !== undefined) });
          this.logger.info({ routerId, remote, reason, admitted: link !== undefined }, 'control channel closed');
          if (link) {
            link.channelClosed();
            void this.connections.closed(link);
          }
        },
      },
      this.logger,
    );
    this.open.add(channel);
  }

  private async admit(
    channel: RouterChannel,
    msg: ChannelMessage,
    peer: { chainPem: string[]; remote: string; fingerprint: string | null; commonName: string | null },
    admitted: (link: ChannelRouterLink) => void,
  ): Promise<void> {
    let routerHello: ReturnType<typeof decodeRouterHello>;
    try {
      routerHello = decodeRouterHello(msg);
    } catch (err) {
      channel.close(isChannelProtocolError(err) ? `bad hello: ${err.message}` : 'bad hello');
      return;
    }
    let admission: Awaited<ReturnType<RouterConnections['admit']>>;
    try {
      admission = await this.connections.admit({
        chainVerified: await this.chainVerifies(peer.chainPem),
        commonName: peer.commonName,
        fingerprint: peer.fingerprint,
        helloId: routerHello.routerId,
      });
    } catch (err) {
      channel.close(`admission could not be decided: ${(err as Error).message}`);
      return;
    }
    if (channel.closed) return;
    if (admission.outcome === 'refused') {
      channel.close(`router refused: ${admission.reason}`);
      return;
    }
    const router = admission.router;
    const link = new ChannelRouterLink(router.id, peer.remote, channel, this.options.version.version);
    admitted(link);
    channel.send(
      createHelloResult(msg, {
        connectionId: link.connectionId,
        controllerId: this.options.controllerId,
        version: this.options.version,
        capabilities: [ControllerCapability.CreateTerminatorV2, ControllerCapability.CreateCircuitV2],
      }),
    );
    channel.open();
    const v = routerHello.version;
    void this.connections.opened(
      link,
      router,
      { version: v.version, revision: v.revision, buildDate: v.buildDate, os: v.os, arch: v.arch },
      routerHello.listeners,
    );
  }

  /** Whether the presented chain leads to the controller's CA bundle, for client authentication. */
  private async chainVerifies(chainPem: string[]): Promise<boolean> {
    const [leaf, ...intermediates] = chainPem;
    if (!leaf) return false;
    try {
      await verifyChain(leaf, intermediates, this.roots, { usage: 'clientAuth' });
      return true;
    } catch {
      return false;
    }
  }

  get channels(): number {
    return this.open.size;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => {
      if (!this.server) return resolve();
      this.server.close(() => resolve());
      for (const c of [...this.open]) c.close('the controller is stopping');
    });
    this.server = undefined;
  }
}

/** The CN of an X.509 subject as Node prints it (`CN=…` lines). */
function commonNameOf(subject: string): string | null {
  for (const line of subject.split('\n')) if (line.startsWith('CN=')) return line.slice(3);
  return null;
}
