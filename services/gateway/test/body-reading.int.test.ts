import { type Server, createServer, request } from 'node:http';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { inputLimits, queueGroup, subjects } from '@ziti/contracts';
import { InProcessBus, RedisApiSessionStore, createLogger } from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayApp } from '../src/app.ts';
import { readGatewayConfig } from '../src/config.ts';

/**
 * The gateway reads request bodies itself (no web framework): within the operation's limit, after
 * any Content-Encoding, refusing what it cannot read with the error envelope. The owner behind the
 * bus echoes the body it was handed, so each case shows exactly what reached it.
 */
const bus = new InProcessBus();
const seen: unknown[] = [];
let store: RedisApiSessionStore;
let server: Server;
let port = 0;

beforeAll(async () => {
  bus.serve(subjects.operations('auth'), queueGroup('auth'), async (payload) => {
    const body = (payload as { body?: unknown }).body;
    seen.push(body);
    return { status: 200, body: { data: { echoed: body ?? null }, meta: {} } };
  });
  const logger = createLogger('gateway', 'silent');
  store = new RedisApiSessionStore('redis://127.0.0.1:6379', `body-reading-${Date.now()}:`, { logger });
  server = createServer(createGatewayApp({ config: readGatewayConfig({}), bus, sessions: store, logger }));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await store?.close();
  await bus.close();
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  json: { data?: { echoed?: unknown }; error?: { code: string; cause?: { message?: string } } };
}

/** POSTs `body` to the login operation (the small-body limit) with the given headers. */
function post(body: Buffer, headers: Record<string, string | number> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/edge/client/v1/authenticate?method=password',
        headers: { 'content-type': 'application/json', 'content-length': body.length, ...headers },
      },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, json: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const login = { username: 'someone', password: 'something' };

describe('request bodies at the gateway', () => {
  it('a plain JSON body reaches the owner as sent', async () => {
    const res = await post(Buffer.from(JSON.stringify(login)));
    expect(res.status).toBe(200);
    expect(res.json.data?.echoed).toEqual(login);
  });

  it('gzip, deflate and br bodies are decompressed before they are read', async () => {
    const text = Buffer.from(JSON.stringify(login));
    for (const [encoding, bytes] of [
      ['gzip', gzipSync(text)],
      ['deflate', deflateSync(text)],
      ['br', brotliCompressSync(text)],
    ] as const) {
      const res = await post(bytes, { 'content-encoding': encoding });
      expect(res.status, encoding).toBe(200);
      expect(res.json.data?.echoed, encoding).toEqual(login);
    }
  });

  it('an encoding it cannot read is a 400 INVALID_CONTENT_TYPE; a corrupt gzip body a 400 COULD_NOT_PARSE_BODY; neither reaches the owner', async () => {
    const before = seen.length;
    const unknown = await post(Buffer.from(JSON.stringify(login)), { 'content-encoding': 'compress' });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error?.code).toBe('INVALID_CONTENT_TYPE');
    const corrupt = await post(Buffer.from('not gzip at all'), { 'content-encoding': 'gzip' });
    expect(corrupt.status).toBe(400);
    expect(corrupt.json.error?.code).toBe('COULD_NOT_PARSE_BODY');
    expect(seen.length).toBe(before);
  });

  it('a body over the limit is a 413, declared or only found out after decompression', async () => {
    const before = seen.length;
    const big = Buffer.from(JSON.stringify({ ...login, pad: 'x'.repeat(inputLimits.maxSmallBodyBytes) }));
    const declared = await post(big);
    expect(declared.status).toBe(413);
    expect(declared.json.error?.code).toBe('REQUEST_ENTITY_TOO_LARGE');
    // 16 KiB of padding compresses to a few dozen bytes: only the decompressed size tells.
    const zipped = gzipSync(big);
    expect(zipped.length).toBeLessThan(inputLimits.maxSmallBodyBytes);
    const inflated = await post(zipped, { 'content-encoding': 'gzip' });
    expect(inflated.status).toBe(413);
    expect(inflated.json.error?.code).toBe('REQUEST_ENTITY_TOO_LARGE');
    expect(seen.length).toBe(before);
  });

  it('a client that gives up halfway leaves the gateway serving the next request', async () => {
    await new Promise<void>((resolve) => {
      const req = request({
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/edge/client/v1/authenticate?method=password',
        headers: { 'content-type': 'application/json', 'content-length': 1000 },
      });
      req.on('error', () => resolve());
      req.write('{"username":');
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 50);
    });
    const res = await post(Buffer.from(JSON.stringify(login)));
    expect(res.status).toBe(200);
  });

  it('a non-JSON Accept gets the status with its own media type and no body', async () => {
    const res = await new Promise<{ status: number; type: string | undefined; text: string }>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, method: 'GET', path: '/edge/client/v1/nowhere', headers: { accept: 'text/html' } },
        (r) => {
          let text = '';
          r.on('data', (d: Buffer) => (text += d.toString()));
          r.on('end', () => resolve({ status: r.statusCode ?? 0, type: r.headers['content-type'], text }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(res).toEqual({ status: 404, type: 'text/html; charset=utf-8', text: '' });
  });
});
