import { createHash } from 'node:crypto';
import { ApiError, type OperationReply, type OperationRequest, type SerializedApiError } from '@ziti/contracts';
import { type IdempotencyClaim, idempotencyClaimed, setIdempotencyClaim } from '../causality.ts';
import type { Logger } from '../logger.ts';
import type { Database, Db } from './database.ts';
import { queryRows } from './database.ts';

/** The claim's row was taken by another request with the same key (it committed first). */
export class IdempotentDuplicateError extends Error {
  constructor() {
    super('another request with this Idempotency-Key committed first');
    this.name = 'IdempotentDuplicateError';
  }
}

/**
 * Claims `claim` in the transaction of the write's first unit of work (`inEventTransaction`): a
 * concurrent request with the same key waits on the row until this transaction ends, then finds it.
 */
export async function claimIdempotentRequest(tx: Db, claim: IdempotencyClaim): Promise<void> {
  const rows = await queryRows(
    tx,
    `insert into idempotent_requests (caller, key, operation, fingerprint) values ($1, $2, $3, $4)
       on conflict (caller, key) do nothing returning 1 as claimed`,
    [claim.caller, claim.key, claim.operation, claim.fingerprint],
    { prepare: true },
  );
  if (rows.length === 0) throw new IdempotentDuplicateError();
}

/** Field names whose values are secrets: an answer holding one is not kept (only that it was given). */
const secretName = /(password|passphrase|secret|token|jwt|key|codes?)$/i;

/**
 * What a write asked for: its operation and input (never who asked or from where), each value of a
 * secret-named field left out: a fast hash of a password kept for a day would let whoever reads the
 * table guess it at the hash's speed, not argon2id's. A repeat that differs only in a secret is taken
 * for the same write (the key says it is).
 */
export function requestFingerprint(operation: string, request: OperationRequest): string {
  const input = [operation, request.params, request.query, request.body ?? null, request.rawBody ?? null];
  const text = JSON.stringify(input, (name, value: unknown) =>
    name !== '' && secretName.test(name) && value !== null && typeof value !== 'object' ? '[secret]' : value,
  );
  return createHash('sha256').update(text).digest('hex');
}

/** The one-time token an enrollment's input carries (`?token=`, or `token` in its JSON body). */
export function enrollmentTokenOf(input: { query?: unknown; body?: unknown }): string | undefined {
  const token =
    (input.query as { token?: unknown } | undefined)?.token ?? (input.body as { token?: unknown } | undefined)?.token;
  return typeof token === 'string' && token !== '' ? token : undefined;
}

/**
 * Whose key it is for a caller without a session: the one-time enrollment token the write spends,
 * as a hash (the caller is whoever holds the token; a key is never answered to another token).
 * Undefined when the request carries none: such a write is not answered from a key.
 */
export function tokenScope(request: OperationRequest): string | undefined {
  const token = enrollmentTokenOf(request);
  return token === undefined ? undefined : `token:${createHash('sha256').update(token).digest('hex')}`;
}

/** An answer's raw body that is certificates only (an enrollment's PEM): nothing secret in it. */
function certificatesOnly(rawBody: string): boolean {
  const text = Buffer.from(rawBody, 'base64').toString('utf8');
  const rest = text.replace(/-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+-----END CERTIFICATE-----/g, '');
  return rest.trim() === '' && text.includes('-----BEGIN CERTIFICATE-----');
}

function holdsSecret(value: unknown, depth = 0): boolean {
  if (depth > 8 || value === null || typeof value !== 'object') return false;
  for (const [k, v] of Object.entries(value)) if (secretName.test(k) || holdsSecret(v, depth + 1)) return true;
  return false;
}

/** What is kept of an outcome: the answer, or the error; nothing (null) when the answer held a secret. */
type KeptOutcome = { reply: OperationReply } | { error: SerializedApiError } | null;

/** How long a key is remembered. */
const keptForHours = 24;

/**
 * The writes of one service that callers sent with an `Idempotency-Key` (the gateway passes it on
 * for an authenticated caller's writes, and for the enrollments that spend a one-time token): a
 * repeat of a key is answered from the first outcome, so a caller may send a write again after a
 * timeout or a dropped connection without doing it twice. The key is claimed in the transaction of
 * the write's first unit of work (so a write that committed has its claim, and one that did not has
 * none), the outcome kept right after; keys are per caller (an identity, or the token an
 * enrollment spends: `tokenScope`) and remembered for a day. A repeat while the first is still
 * running, or whose answer was lost (a crash between the commit and keeping it) or held a secret,
 * is answered 409 IDEMPOTENCY_KEY_IN_USE; the same key with other input 422
 * IDEMPOTENCY_KEY_REUSED.
 */
export class IdempotentReplies {
  private lastPrune = 0;

  constructor(
    private readonly database: Database,
    private readonly logger: Pick<Logger, 'warn'>,
  ) {}

  async answer(claim: IdempotencyClaim, run: () => Promise<OperationReply>): Promise<OperationReply> {
    await this.prune();
    const earlier = await this.earlier(claim);
    if (earlier) return earlier;
    setIdempotencyClaim(claim);
    let reply: OperationReply;
    try {
      reply = await run();
    } catch (err) {
      // A repeat that ran beside the first and lost the claim: the first's outcome, if kept by now.
      if (err instanceof IdempotentDuplicateError) return (await this.earlier(claim)) ?? inUse();
      if (idempotencyClaimed() && err instanceof ApiError) await this.keep(claim, { error: err.toJSON() });
      throw err;
    }
    if (idempotencyClaimed()) {
      const secret =
        !('error' in reply) &&
        ((reply.rawBody !== undefined && !certificatesOnly(reply.rawBody)) || holdsSecret(reply.body));
      await this.keep(claim, secret ? null : { reply });
    }
    return reply;
  }

  /** The first outcome of the key; undefined when none committed. */
  private async earlier(claim: IdempotencyClaim): Promise<OperationReply | undefined> {
    const [row] = await queryRows<{ fingerprint: string; reply: unknown }>(
      this.database.db,
      'select fingerprint, reply from idempotent_requests where caller = $1 and key = $2',
      [claim.caller, claim.key],
      { prepare: true },
    );
    if (!row) return undefined;
    if (row.fingerprint !== claim.fingerprint)
      throw new ApiError('IDEMPOTENCY_KEY_REUSED', {
        code: 'IDEMPOTENCY_KEY_REUSED',
        message: 'this Idempotency-Key was used for another operation or other input',
      });
    const kept = (typeof row.reply === 'string' ? JSON.parse(row.reply) : row.reply) as KeptOutcome;
    if (!kept) return inUse();
    if ('error' in kept) throw ApiError.fromJSON(kept.error);
    return { ...kept.reply, headers: { ...kept.reply.headers, 'idempotent-replayed': 'true' } };
  }

  private async keep(claim: IdempotencyClaim, outcome: KeptOutcome): Promise<void> {
    if (!outcome) return;
    await queryRows(
      this.database.db,
      'update idempotent_requests set reply = $3::jsonb where caller = $1 and key = $2',
      [claim.caller, claim.key, JSON.stringify(outcome)],
      { prepare: true },
    ).catch((err: unknown) =>
      // The write committed; a repeat of the key is then told its answer was not kept (409).
      this.logger.warn({ err, operation: claim.operation }, 'the answer of an idempotent write could not be kept'),
    );
  }

  /** Forgets keys older than a day, at most every ten minutes. */
  private async prune(): Promise<void> {
    if (Date.now() - this.lastPrune < 600_000) return;
    this.lastPrune = Date.now();
    await queryRows(
      this.database.db,
      `delete from idempotent_requests where claimed_at < now() - interval '${keptForHours} hours'`,
    ).catch((err: unknown) => this.logger.warn({ err }, 'old idempotency keys could not be pruned'));
  }
}

function inUse(): never {
  throw new ApiError('IDEMPOTENCY_KEY_IN_USE', {
    code: 'IDEMPOTENCY_KEY_IN_USE',
    message: 'a request with this Idempotency-Key is in progress, or its answer was not kept; read the entity',
  });
}
