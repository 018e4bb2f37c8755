import { createHmac } from 'node:crypto';
import type { EventEnvelope } from '@ziti/platform/bus/bus';
import { describe, expect, it } from 'vitest';
import {
  backoffDelay,
  classifyStatus,
  feedPosition,
  frameEvent,
  parseRetryAfter,
  readSinkConfig,
  redactUrl,
  signWebhook,
  sinkSubject,
  statusFailure,
  verifyWebhook,
} from './sinks.domain.ts';

const record = (n: number, category: 'change' | 'authentication') => ({
  id: `rec-${n}`,
  at: '2026-11-27T10:00:00.000Z',
  category,
  operation: category === 'change' ? 'management.createIdentity' : 'client.authenticate',
  requestId: `req-${n}`,
  action: category === 'change' ? 'created' : 'failed',
  eventId: `auth:${n}`,
  ...(category === 'authentication' ? { authMethod: 'password', reason: 'INVALID_AUTH' } : {}),
});

const change = (n: number) => ({
  namespace: 'entityChange' as const,
  event_src_id: 'ctrl',
  timestamp: '2026-11-27T10:00:00.000Z',
  eventId: `auth:${n}`,
  eventType: 'created' as const,
  metadata: { version: 'v1', author: { type: 'identity' as const, id: 'admin' } },
  entityType: 'identities',
  isParentEvent: false,
  initialState: null,
  finalState: { id: `id-${n}`, name: `n${n}` },
});

const envelope = (n: number, data: unknown, type = 'auditRecord.created'): EventEnvelope => ({
  id: `audit:${n}`,
  type,
  version: 1,
  source: 'audit',
  sequence: n,
  occurredAt: '2026-11-27T10:00:00.000Z',
  data,
});

describe('framing', () => {
  it('delivers the entity-change event of a change record, with its feed id', () => {
    const framed = frameEvent(envelope(7, { record: record(7, 'change'), change: change(7) }), {
      includeAuthentication: false,
    });
    expect(framed.kind).toBe('deliver');
    if (framed.kind !== 'deliver') return;
    expect(framed.item).toMatchObject({ id: 'audit:7', position: 7 });
    expect(JSON.parse(framed.item.body)).toEqual({ ...change(7), feedId: 'audit:7' });
    expect(framed.item.body).not.toContain('\n');
  });

  it('delivers authentication records only when the sink includes them', () => {
    const event = envelope(8, { record: record(8, 'authentication') });
    expect(frameEvent(event, { includeAuthentication: false })).toEqual({ kind: 'pass' });
    const framed = frameEvent(event, { includeAuthentication: true });
    if (framed.kind !== 'deliver') throw new Error('expected a delivery');
    expect(JSON.parse(framed.item.body)).toEqual({
      namespace: 'authentication',
      ...record(8, 'authentication'),
      feedId: 'audit:8',
    });
  });

  it('passes over other event types and change records without a change', () => {
    expect(frameEvent(envelope(1, {}, 'somethingElse.happened'), { includeAuthentication: true }).kind).toBe('pass');
    expect(frameEvent(envelope(2, { record: record(2, 'change') }), { includeAuthentication: true }).kind).toBe('pass');
  });

  it('reports an auditRecord.created it cannot read', () => {
    const framed = frameEvent(envelope(3, { record: { id: 1 } }), { includeAuthentication: true });
    expect(framed.kind).toBe('undecodable');
  });

  it('reads positions from feed ids', () => {
    expect(feedPosition('audit:42')).toBe(42);
    expect(feedPosition('audit:x')).toBeUndefined();
    expect(feedPosition(42)).toBeUndefined();
  });

  it('follows every audit event (dense positions)', () => {
    expect(sinkSubject).toBe('ziti.evt.audit.>');
  });
});

describe('webhook signature', () => {
  const secret = 'a-secret-of-sixteen-or-more';
  const body = '{"a":1}';

  it('is the hex HMAC-SHA256 of "<event id>.<timestamp>.<body>"', () => {
    const expected = createHmac('sha256', secret).update(`audit:5.1700000000.${body}`).digest('hex');
    expect(signWebhook(secret, 'audit:5', '1700000000', body)).toBe(`sha256=${expected}`);
  });

  it('verifies what was signed, and nothing else', () => {
    const signature = signWebhook(secret, 'audit:5', '1700000000', body);
    const base = { secret, eventId: 'audit:5', timestamp: '1700000000', body, signature, nowMs: 1_700_000_010_000 };
    expect(verifyWebhook(base)).toBe(true);
    expect(verifyWebhook({ ...base, body: '{"a":2}' })).toBe(false);
    expect(verifyWebhook({ ...base, eventId: 'audit:6' })).toBe(false);
    expect(verifyWebhook({ ...base, timestamp: '1700000001' })).toBe(false);
    expect(verifyWebhook({ ...base, secret: `${secret}x` })).toBe(false);
    expect(verifyWebhook({ ...base, signature: 'sha256=00' })).toBe(false);
    expect(verifyWebhook({ ...base, nowMs: 1_700_000_000_000 + 301_000 })).toBe(false);
    expect(verifyWebhook({ ...base, timestamp: 'soon' })).toBe(false);
  });
});

describe('retry schedule', () => {
  const bounds = { minMs: 100, maxMs: 1_000 };

  it('doubles from the minimum, capped, with equal jitter', () => {
    expect(backoffDelay(1, bounds, () => 0)).toBe(50);
    expect(backoffDelay(1, bounds, () => 1)).toBe(100);
    expect(backoffDelay(2, bounds, () => 1)).toBe(200);
    expect(backoffDelay(3, bounds, () => 1)).toBe(400);
    expect(backoffDelay(5, bounds, () => 1)).toBe(1_000);
    expect(backoffDelay(500, bounds, () => 1)).toBe(1_000);
    for (let i = 0; i < 50; i++) {
      const d = backoffDelay(4, bounds);
      expect(d).toBeGreaterThanOrEqual(400);
      expect(d).toBeLessThanOrEqual(800);
    }
  });

  it("honours the receiver's Retry-After, within the cap", () => {
    expect(backoffDelay(1, bounds, () => 0, 700)).toBe(700);
    expect(backoffDelay(1, bounds, () => 0, 60_000)).toBe(1_000);
  });

  it('reads Retry-After as seconds or a date', () => {
    const now = Date.parse('2026-11-27T10:00:00Z');
    expect(parseRetryAfter('3', now)).toBe(3_000);
    expect(parseRetryAfter('Fri, 27 Nov 2026 10:00:05 GMT', now)).toBe(5_000);
    expect(parseRetryAfter('later', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });

  it('counts only a 2xx as delivered and retries everything else', () => {
    expect(classifyStatus(200)).toBe('ok');
    expect(classifyStatus(204)).toBe('ok');
    expect(classifyStatus(301)).toBe('http_3xx');
    expect(classifyStatus(400)).toBe('http_4xx');
    expect(classifyStatus(401)).toBe('http_4xx');
    expect(classifyStatus(408)).toBe('http_408');
    expect(classifyStatus(429)).toBe('http_429');
    expect(classifyStatus(500)).toBe('http_5xx');
    expect(classifyStatus(503)).toBe('http_5xx');
    expect(statusFailure(200)).toBeUndefined();
    expect(statusFailure(429, 2_000)).toEqual({
      reason: 'http_429',
      status: 429,
      message: 'HTTP 429',
      retryAfterMs: 2_000,
    });
  });

  it('logs a webhook URL without its credentials or query', () => {
    expect(redactUrl('https://user:pw@hooks.example:8443/in/abc?token=s3cret')).toBe(
      'https://hooks.example:8443/in/abc?…',
    );
    expect(redactUrl('http://127.0.0.1:9000/x')).toBe('http://127.0.0.1:9000/x');
  });
});

describe('readSinkConfig', () => {
  it('configures nothing when nothing is set', () => {
    const result = readSinkConfig({}, { cwd: '/srv' });
    expect(result).toEqual({ ok: true, config: { backoff: { minMs: 500, maxMs: 30_000 } } });
  });

  it('reads both sinks with their defaults', () => {
    const result = readSinkConfig(
      {
        ZITI_EVENTS_FILE: '/var/log/ziti/events.jsonl',
        ZITI_EVENTS_WEBHOOK_URL: 'https://hooks.example/in',
        ZITI_EVENTS_WEBHOOK_SECRET: 'sixteen-chars-ok',
        ZITI_EVENTS_WEBHOOK_INCLUDE_AUTHENTICATION: 'true',
        ZITI_DATA_DIR: 'state',
      },
      { cwd: '/srv' },
    );
    expect(result).toEqual({
      ok: true,
      config: {
        backoff: { minMs: 500, maxMs: 30_000 },
        file: {
          path: '/var/log/ziti/events.jsonl',
          checkpointPath: '/var/log/ziti/.events.jsonl.checkpoint',
          includeAuthentication: false,
        },
        webhook: {
          url: 'https://hooks.example/in',
          secret: 'sixteen-chars-ok',
          includeAuthentication: true,
          timeoutMs: 10_000,
          checkpointPath: '/srv/state/audit-sink-webhook.checkpoint',
        },
      },
    });
  });

  it('reports every problem at once', () => {
    const result = readSinkConfig({
      ZITI_EVENTS_FILE: 'events.jsonl',
      ZITI_EVENTS_FILE_INCLUDE_AUTHENTICATION: 'maybe',
      ZITI_EVENTS_WEBHOOK_URL: 'ftp://hooks.example/in',
      ZITI_EVENTS_WEBHOOK_SECRET: 'short',
      ZITI_EVENTS_WEBHOOK_TIMEOUT_MS: '5s',
      ZITI_EVENTS_WEBHOOK_CHECKPOINT: 'relative/cp',
      ZITI_EVENTS_RETRY_MIN_MS: '2000',
      ZITI_EVENTS_RETRY_MAX_MS: '1000',
    });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems).toEqual([
      'ZITI_EVENTS_RETRY_MAX_MS must not be below ZITI_EVENTS_RETRY_MIN_MS',
      'ZITI_EVENTS_FILE must be an absolute path',
      'ZITI_EVENTS_FILE_INCLUDE_AUTHENTICATION must be true or false',
      'ZITI_EVENTS_WEBHOOK_TIMEOUT_MS must be an integer in 100..25000',
      'ZITI_EVENTS_WEBHOOK_CHECKPOINT must be an absolute path',
      'ZITI_EVENTS_WEBHOOK_URL must be an http or https URL',
      'ZITI_EVENTS_WEBHOOK_SECRET must be at least 16 characters',
    ]);
  });

  it('requires the secret with a webhook, and a URL it can parse', () => {
    const missing = readSinkConfig({ ZITI_EVENTS_WEBHOOK_URL: 'https://hooks.example/in' });
    expect(missing).toEqual({
      ok: false,
      problems: ['ZITI_EVENTS_WEBHOOK_SECRET is required with ZITI_EVENTS_WEBHOOK_URL'],
    });
    const bad = readSinkConfig({
      ZITI_EVENTS_WEBHOOK_URL: 'not a url',
      ZITI_EVENTS_WEBHOOK_SECRET: 'sixteen-chars-ok',
    });
    expect(bad).toEqual({ ok: false, problems: ['ZITI_EVENTS_WEBHOOK_URL must be an absolute http(s) URL'] });
  });

  it('never puts the secret in a problem', () => {
    const result = readSinkConfig({ ZITI_EVENTS_WEBHOOK_URL: 'gopher://x', ZITI_EVENTS_WEBHOOK_SECRET: 'tiny-secret' });
    expect(JSON.stringify(result)).not.toContain('tiny-secret');
  });
});
