import { pino } from 'pino';

export type Logger = pino.Logger;

/**
 * Structured JSON logs. Secrets never reach a log line: these keys are censored wherever they
 * appear in a logged object.
 */
const redactPaths = [
  'password',
  '*.password',
  'currentPassword',
  '*.currentPassword',
  'token',
  '*.token',
  'keyPem',
  '*.keyPem',
  'secret',
  '*.secret',
  'headers["zt-session"]',
  'headers.authorization',
  'headers["mfa-validation-code"]',
];

export function createLogger(name: string, level = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({ name, level, redact: { paths: redactPaths, censor: '[redacted]' }, base: { service: name } });
}
