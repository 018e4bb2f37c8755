import { createServer } from 'node:http';
import { InProcessBus, createLogger } from '@ziti/platform';
import { describe, expect, it } from 'vitest';
import { createGatewayApp, expressMessageClasses } from '../src/app.ts';
import { readGatewayConfig } from '../src/config.ts';

describe('the gateway app on Node’s HTTP server', () => {
  it('requests and responses are born with the app’s express prototypes, so express never swaps them', async () => {
    const logger = createLogger('gateway', 'silent');
    const sessions = { close: async () => undefined } as never;
    const app = createGatewayApp({ config: readGatewayConfig({}), bus: new InProcessBus(), sessions, logger });
    const server = createServer(expressMessageClasses(app), app);
    const born: { req: unknown; res: unknown }[] = [];
    // Runs before the app: what the server made, before express could touch it.
    server.prependListener('request', (req, res) =>
      born.push({ req: Object.getPrototypeOf(req), res: Object.getPrototypeOf(res) }),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as { port: number }).port;
      const res = await fetch(`http://127.0.0.1:${port}/edge/client/v1/version`);
      expect(res.status).toBe(200);
      expect((await res.json()) as { data: unknown }).toHaveProperty('data');
      expect(born).toEqual([{ req: app.request, res: app.response }]);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
