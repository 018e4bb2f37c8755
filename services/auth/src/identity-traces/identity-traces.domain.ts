import { ApiError } from '@ziti/contracts';
import { shortId } from '@ziti/platform/ids';
import type { IdentityTrace } from './identity-traces.ports.ts';
import type { UnitOfWork } from '../shared/stores.ports.ts';

export interface TraceSpecInput {
  channels?: string[] | null;
  duration?: string | null;
  enabled?: boolean | null;
  traceId?: string | null;
}

const units: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
};

/** Go's `time.ParseDuration` (e.g. `90s`, `1h30m`, `1.5h`, `300ms`), in milliseconds; null when malformed. */
export function parseGoDuration(text: string): number | null {
  const m = /^([-+]?)((?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$/.exec(text);
  if (!m) return text === '0' ? 0 : null;
  let total = 0;
  for (const part of text.replace(/^[-+]/, '').matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g)) {
    total += Number(part[1]) * units[part[2]!]!;
  }
  return m[1] === '-' ? -total : total;
}

/** Default trace duration when none is given (the reference's 10 minutes). */
const defaultDurationMs = 10 * 60_000;

/**
 * `PUT /identities/{id}/trace`: data-flow tracing of an identity's traffic. Routers are not part of
 * this controller, so the specification is stored and answered (enabled, trace id, until) for
 * the day the data plane asks for it.
 */
export class IdentityTraceService {
  constructor(
    private readonly work: UnitOfWork,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async set(identityId: string, spec: TraceSpecInput): Promise<IdentityTrace> {
    let durationMs = defaultDurationMs;
    if (spec.duration) {
      const parsed = parseGoDuration(spec.duration.trim());
      if (parsed === null || parsed <= 0)
        throw ApiError.field('duration', 'duration must be a positive duration such as 10m or 1h30m', spec.duration);
      durationMs = parsed;
    }
    const now = this.now();
    const enabled = spec.enabled ?? false;
    const trace: IdentityTrace = {
      identityId,
      enabled,
      traceId: enabled ? spec.traceId?.trim() || shortId() : null,
      until: enabled ? new Date(now.getTime() + durationMs) : null,
      channels: enabled ? [...new Set(spec.channels ?? [])] : [],
      updatedAt: now,
    };
    await this.work(async (s) => {
      if (!(await s.identities.get(identityId))) throw ApiError.notFound('identity', identityId);
      await s.traces.put(trace);
    });
    return trace;
  }
}
