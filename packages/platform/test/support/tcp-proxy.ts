import { type Server, type Socket, createConnection, createServer } from 'node:net';

/**
 * A loopback TCP proxy to a real server (NATS, Redis), so a test can cut one client's connection
 * and give it back — the client sees its server go away and come back — without touching the
 * machine's server, which other tests share. `cut` closes the listener and every connection
 * through it (the client then reconnects against a closed port); `restore` listens again on the
 * same port.
 */
export class TcpProxy {
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  port = 0;

  private constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  /** A proxy to `url`'s host and port (e.g. `nats://127.0.0.1:4222`), listening on a free loopback port. */
  static async to(url: string): Promise<TcpProxy> {
    const target = new URL(url);
    const proxy = new TcpProxy(target.hostname, Number(target.port));
    await proxy.listen(0);
    return proxy;
  }

  /** The proxy's URL with the scheme of `url` (`nats://127.0.0.1:<port>`). */
  url(scheme: string): string {
    return `${scheme}//127.0.0.1:${this.port}`;
  }

  private listen(port: number): Promise<void> {
    const server = createServer((client) => {
      const upstream = createConnection({ host: this.targetHost, port: this.targetPort });
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        const address = server.address();
        this.port = typeof address === 'object' && address ? address.port : port;
        resolve();
      });
    });
  }

  /** Stops listening and drops every connection through the proxy. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Listens again on the same port. */
  async restore(): Promise<void> {
    if (!this.server) await this.listen(this.port);
  }

  async close(): Promise<void> {
    await this.cut();
  }
}
