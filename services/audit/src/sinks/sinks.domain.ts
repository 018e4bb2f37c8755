import { createHmac, timingSafeEqual } from 'node:crypto';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { auditEventTypes, auditRecordCreatedState, subjects } from '@ziti/contracts';
import type { EventEnvelope } from '@ziti/platform/bus/bus';
import type { SinkFailure, SinkFailureReason, SinkItem } from './sinks.ports.ts';

/**
 * The pure parts of the event sinks (docs/extensions.md, "Event sinks"): which audit events a sink
 * delivers and as what, the webhook's signature, the retry schedule, how an HTTP answer is read,
 * and the configuration.
 */

/** The durable consumer of each sink: shared by every replica of the audit service. */
export const sinkDurables = { file: 'audit-sink-file', webhook: 'audit-sink-webhook' } as const;
export type SinkName = keyof typeof sinkDurables;

/**
 * Every event audit publishes, not only `auditRecord.created`: audit's positions are dense over all
 * of its events, and the sinks rely on that to know that nothing is missing before an event.
 */
export const sinkSubject = subjects.event('audit', '>');

// ---------------------------------------------------------------------------------------------
// Framing

export type Framed =
  /** Deliver this item. */
  | { kind: 'deliver'; item: SinkItem }
  /** Not for this sink (another event type, a record without a change, an authentication left out). */
  | { kind: 'pass' }
  /** An `auditRecord.created` this build cannot read: passed over, and reported. */
  | { kind: 'undecodable'; problem: string };

/**
 * What a sink delivers for one audit event: the entity-change event of a change record, and, when
 * the sink includes them, authentication records as `{namespace: 'authentication', ...record}`;
 * either with `feedId`, the event's id on the feed (`audit:<position>`, increasing).
 */
export function frameEvent(event: EventEnvelope, options: { includeAuthentication: boolean }): Framed {
  if (event.type !== auditEventTypes.auditRecordCreated.type) return { kind: 'pass' };
  const parsed = auditRecordCreatedState.safeParse(event.data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { kind: 'undecodable', problem: `${issue?.path.join('.') || 'data'}: ${issue?.message ?? 'invalid'}` };
  }
  const { record, change } = parsed.data;
  let payload: Record<string, unknown> | undefined;
  if (change) payload = change;
  else if (record.category === 'authentication' && options.includeAuthentication)
    payload = { namespace: 'authentication', ...record };
  if (!payload) return { kind: 'pass' };
  return {
    kind: 'deliver',
    item: { id: event.id, position: event.sequence, body: JSON.stringify({ ...payload, feedId: event.id }) },
  };
}

/** The position in a feed id (`audit:42` → 42). */
export function feedPosition(feedId: unknown): number | undefined {
  if (typeof feedId !== 'string') return undefined;
  const match = /:(\d+)$/.exec(feedId);
  if (!match) return undefined;
  const n = Number(match[1]);
  return Number.isSafeInteger(n) ? n : undefined;
}

// ---------------------------------------------------------------------------------------------
// Webhook signature

export const webhookHeaders = {
  signature: 'X-Ziti-Signature',
  eventId: 'X-Ziti-Event-Id',
  timestamp: 'X-Ziti-Timestamp',
} as const;

/** The signed material: `<event id>.<timestamp>.<body>` (the body byte for byte as sent). */
export function signedMaterial(eventId: string, timestamp: string, body: string): string {
  return `${eventId}.${timestamp}.${body}`;
}

/** `sha256=<hex HMAC-SHA256 of the signed material with the secret>`. */
export function signWebhook(secret: string, eventId: string, timestamp: string, body: string): string {
  return `sha256=${createHmac('sha256', secret)
    .update(signedMaterial(eventId, timestamp, body))
    .digest('hex')}`;
}

/**
 * What a receiver does (the reference in code of the documented check): the signature matches
 * (compared in constant time) and the timestamp is within `toleranceSeconds` of its clock.
 */
export function verifyWebhook(input: {
  secret: string;
  eventId: string;
  timestamp: string;
  body: string;
  signature: string;
  nowMs: number;
  toleranceSeconds?: number;
}): boolean {
  if (!/^\d{1,15}$/.test(input.timestamp)) return false;
  const skew = Math.abs(input.nowMs / 1000 - Number(input.timestamp));
  if (skew > (input.toleranceSeconds ?? 300)) return false;
  const expected = Buffer.from(signWebhook(input.secret, input.eventId, input.timestamp, input.body));
  const given = Buffer.from(input.signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

// ---------------------------------------------------------------------------------------------
// Retry schedule and HTTP answers

export interface BackoffBounds {
  /** The first retry's delay (before jitter). */
  minMs: number;
  /** No delay exceeds it, `Retry-After` included. */
  maxMs: number;
}

/**
 * The delay before the next attempt after `failures` failures in a row: exponential from `minMs`,
 * capped at `maxMs`, with equal jitter (half fixed, half random) so that retries of many sinks do
 * not beat in step; at least what the receiver asked for with `Retry-After`, within the cap.
 */
export function backoffDelay(
  failures: number,
  bounds: BackoffBounds,
  random: () => number = Math.random,
  retryAfterMs?: number,
): number {
  const exponent = Math.min(Math.max(failures, 1) - 1, 40);
  const base = Math.min(bounds.maxMs, bounds.minMs * 2 ** exponent);
  const jittered = base / 2 + (random() * base) / 2;
  const floor = retryAfterMs === undefined ? 0 : Math.min(bounds.maxMs, retryAfterMs);
  return Math.round(Math.max(jittered, floor));
}

/**
 * How an answer counts. Only a 2xx is delivered. Everything else is retried with back-off, a 4xx
 * too: the receiver refusing (a wrong secret, a moved URL, a full disk behind it) is an operator's
 * fix away, and dropping the event would leave a hole in the feed; the sink shows it as failing
 * (metric and log line) until it is fixed.
 */
export function classifyStatus(status: number): SinkFailureReason | 'ok' {
  if (status >= 200 && status < 300) return 'ok';
  if (status === 408) return 'http_408';
  if (status === 429) return 'http_429';
  if (status >= 500) return 'http_5xx';
  if (status >= 400) return 'http_4xx';
  return 'http_3xx';
}

/** A `Retry-After` header (seconds, or an HTTP date) in milliseconds from `nowMs`. */
export function parseRetryAfter(value: string | null | undefined, nowMs: number): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** The failure an answer other than a 2xx stands for. */
export function statusFailure(status: number, retryAfterMs?: number): SinkFailure | undefined {
  const reason = classifyStatus(status);
  if (reason === 'ok') return undefined;
  return { reason, status, message: `HTTP ${status}`, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
}

/** A URL as it may appear in a log line: no credentials, no query (webhook URLs often carry a token). */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}${u.search ? '?…' : ''}`;
  } catch {
    return '[invalid url]';
  }
}

// ---------------------------------------------------------------------------------------------
// Configuration

export interface FileSinkConfig {
  /** Absolute path of the JSON-lines file. */
  path: string;
  /** Where the file sink keeps its position: beside the file, `.<name>.checkpoint`. */
  checkpointPath: string;
  includeAuthentication: boolean;
}

export interface WebhookSinkConfig {
  url: string;
  secret: string;
  includeAuthentication: boolean;
  /** Longest one POST may take, answer included. */
  timeoutMs: number;
  /**
   * Absolute path of the file that keeps the webhook's position when no shared checkpoint is given;
   * with audit's (its database), the file earlier versions kept it in, read until that one has one.
   */
  checkpointPath: string;
}

export interface SinkTuning {
  /** Longest a batch waits in hand for its next attempt; a longer wait hands it back to the bus. */
  maxWaitInBatchMs?: number;
  /** Longest one batch is worked on before the rest is handed back (below the bus's hold of 35 s). */
  batchBudgetMs?: number;
  /** How long a missing position is waited for before the sink passes over it (it expired from the stream). */
  gapTimeoutMs?: number;
}

export interface SinkConfig {
  file?: FileSinkConfig;
  webhook?: WebhookSinkConfig;
  backoff: BackoffBounds;
  tuning?: SinkTuning;
}

export const sinkDefaults = {
  webhookTimeoutMs: 10_000,
  minBackoffMs: 500,
  maxBackoffMs: 30_000,
  secretMinLength: 16,
} as const;

export type SinkConfigResult = { ok: true; config: SinkConfig } | { ok: false; problems: string[] };

/**
 * Reads and checks every sink variable at once, so an operator sees every problem in one go. No
 * variable set: no sink (an empty config).
 */
export function readSinkConfig(
  env: Record<string, string | undefined>,
  options: { cwd?: string } = {},
): SinkConfigResult {
  const problems: string[] = [];
  const get = (name: string): string | undefined => {
    const v = env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  const bool = (name: string): boolean => {
    const raw = get(name);
    if (raw === undefined) return false;
    if (/^(true|1|yes)$/i.test(raw)) return true;
    if (/^(false|0|no)$/i.test(raw)) return false;
    problems.push(`${name} must be true or false`);
    return false;
  };
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = get(name);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      problems.push(`${name} must be an integer in ${min}..${max}`);
      return fallback;
    }
    return n;
  };
  const absolutePath = (name: string): string | undefined => {
    const raw = get(name);
    if (raw === undefined) return undefined;
    if (!isAbsolute(raw)) {
      problems.push(`${name} must be an absolute path`);
      return undefined;
    }
    if (raw.endsWith('/')) {
      problems.push(`${name} must name a file, not a directory`);
      return undefined;
    }
    return resolve(raw);
  };

  const config: SinkConfig = {
    backoff: {
      minMs: int('ZITI_EVENTS_RETRY_MIN_MS', sinkDefaults.minBackoffMs, 1, 60_000),
      maxMs: int('ZITI_EVENTS_RETRY_MAX_MS', sinkDefaults.maxBackoffMs, 1, 3_600_000),
    },
  };
  if (config.backoff.maxMs < config.backoff.minMs)
    problems.push('ZITI_EVENTS_RETRY_MAX_MS must not be below ZITI_EVENTS_RETRY_MIN_MS');

  const filePath = absolutePath('ZITI_EVENTS_FILE');
  const fileAuth = bool('ZITI_EVENTS_FILE_INCLUDE_AUTHENTICATION');
  if (filePath) {
    config.file = {
      path: filePath,
      checkpointPath: join(dirname(filePath), `.${basename(filePath)}.checkpoint`),
      includeAuthentication: fileAuth,
    };
  }

  const rawUrl = get('ZITI_EVENTS_WEBHOOK_URL');
  const secret = env.ZITI_EVENTS_WEBHOOK_SECRET;
  const webhookAuth = bool('ZITI_EVENTS_WEBHOOK_INCLUDE_AUTHENTICATION');
  const timeoutMs = int('ZITI_EVENTS_WEBHOOK_TIMEOUT_MS', sinkDefaults.webhookTimeoutMs, 100, 25_000);
  const checkpointPath =
    absolutePath('ZITI_EVENTS_WEBHOOK_CHECKPOINT') ??
    resolve(options.cwd ?? process.cwd(), get('ZITI_DATA_DIR') ?? 'data', 'audit-sink-webhook.checkpoint');
  if (rawUrl !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(rawUrl);
    } catch {
      problems.push('ZITI_EVENTS_WEBHOOK_URL must be an absolute http(s) URL');
    }
    if (url && url.protocol !== 'http:' && url.protocol !== 'https:')
      problems.push('ZITI_EVENTS_WEBHOOK_URL must be an http or https URL');
    if (url && url.hash) problems.push('ZITI_EVENTS_WEBHOOK_URL must not have a fragment');
    if (secret === undefined || secret === '')
      problems.push('ZITI_EVENTS_WEBHOOK_SECRET is required with ZITI_EVENTS_WEBHOOK_URL');
    else if (secret.length < sinkDefaults.secretMinLength)
      problems.push(`ZITI_EVENTS_WEBHOOK_SECRET must be at least ${sinkDefaults.secretMinLength} characters`);
    if (url && secret && secret.length >= sinkDefaults.secretMinLength) {
      config.webhook = {
        url: url.toString(),
        secret,
        includeAuthentication: webhookAuth,
        timeoutMs,
        checkpointPath,
      };
    }
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, config };
}
