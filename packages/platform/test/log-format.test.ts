import { describe, expect, it } from 'vitest';
import { createLogger, formatLogLine, serviceLogger } from '../src/logger.ts';

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

describe('a service run inside another process (npm start)', () => {
  it("logs where the process's logger does, at its level, naming its service once", () => {
    const lines: string[] = [];
    const parent = createLogger('controller', 'warn', { write: (line: string) => void lines.push(line) });
    const auth = serviceLogger(parent, 'auth');
    auth.info('not at warn');
    auth.warn({ position: 7 }, 'event parked');
    parent.warn('from the controller');
    expect(lines).toHaveLength(2);
    const [fromAuth, fromController] = lines.map((l) => l.trim());
    expect(fromAuth!.match(/"service":/g)).toHaveLength(1);
    expect(JSON.parse(fromAuth!)).toMatchObject({ service: 'auth', name: 'auth', position: 7, msg: 'event parked' });
    expect(JSON.parse(fromController!)).toMatchObject({ service: 'controller', msg: 'from the controller' });
  });
});
