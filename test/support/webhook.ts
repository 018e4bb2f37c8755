import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/**
 * One POST of the webhook sink, read and checked as docs/extensions.md tells a receiver to: the
 * HMAC-SHA256 of `<X-Ziti-Event-Id>.<X-Ziti-Timestamp>.<body>` with the shared secret, compared in
 * constant time with `X-Ziti-Signature` (`sha256=<hex>`), a timestamp within five minutes, a JSON body.
 */
export async function receiveWebhook(
  req: IncomingMessage,
  secret: string,
): Promise<{ id: string; body: string; valid: boolean }> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks).toString('utf8');
  const id = String(req.headers['x-ziti-event-id'] ?? '');
  const timestamp = String(req.headers['x-ziti-timestamp'] ?? '');
  const signature = String(req.headers['x-ziti-signature'] ?? '');
  const expected = `sha256=${createHmac('sha256', secret).update(`${id}.${timestamp}.${body}`).digest('hex')}`;
  const valid =
    Math.abs(Date.now() / 1000 - Number(timestamp)) <= 300 &&
    req.headers['content-type'] === 'application/json' &&
    signature.length === expected.length &&
    timingSafeEqual(Buffer.from(signature), Buffer.from(expected));
  return { id, body, valid };
}
