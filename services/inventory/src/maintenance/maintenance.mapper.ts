import { ts } from '../shared/wire.mapper.ts';

/** Go's zero time: what a Go client reads for a time that was never set. */
const zeroTime = '0001-01-01T00:00:00.000Z';

/**
 * ZITI-FACTS §13. The reference answers null for times and an error that are unset, which the
 * spec (required, not nullable) forbids and generated clients reject: unset times are Go's zero
 * time, no error is "", no results are [].
 */
export function dataIntegrityDetail(s: {
  inProgress: boolean;
  fixingErrors: boolean;
  tooManyErrors: boolean;
  startTime: Date | null;
  endTime: Date | null;
  error: string | null;
  results: { description: string; fixed: boolean }[];
}) {
  return {
    inProgress: s.inProgress,
    fixingErrors: s.fixingErrors,
    tooManyErrors: s.tooManyErrors,
    startTime: s.startTime ? ts(s.startTime) : zeroTime,
    endTime: s.endTime ? ts(s.endTime) : zeroTime,
    error: s.error ?? '',
    results: s.results,
  };
}
