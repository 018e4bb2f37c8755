import { describe, expect, it } from 'vitest';
import { formatLogLine } from '../src/logger.ts';

describe('log lines for a terminal', () => {
  it('reads as time, level, service, message and fields, with an error stack below', () => {
    const line = JSON.stringify({
      level: 40,
      time: Date.parse('2026-11-25T12:00:01.250Z'),
      service: 'auth',
      name: 'auth',
      pid: 1,
      msg: 'event parked',
      consumer: 'policy-from-auth',
      position: 7,
      err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at x (y.ts:1:1)' },
    });
    expect(formatLogLine(line)).toBe(
      '12:00:01.250 WARN  auth           event parked consumer=policy-from-auth position=7\nError: boom\n    at x (y.ts:1:1)\n',
    );
  });

  it('passes a line that is not JSON through', () => {
    expect(formatLogLine('plain')).toBe('plain');
  });
});
