import { pino } from 'pino';

export type Logger = pino.Logger;

/**
 * Structured JSON logs. Secrets never reach a log line: these keys are censored wherever they
 * appear in a logged object, and every error is logged through `safeError` (no bound parameters
 * of a statement, no value Postgres echoes).
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

export function createLogger(
  name: string,
  level = process.env.LOG_LEVEL ?? 'info',
  /** Where the lines go (stdout unless given; tests capture them). */
  destination?: pino.DestinationStream,
): Logger {
  const options: pino.LoggerOptions = {
    name,
    level,
    redact: { paths: redactPaths, censor: '[redacted]' },
    base: { service: name },
    serializers: { err: safeError, error: safeError },
    hooks: {
      // Errors anywhere in the logged object (or logged alone) are made safe before pino reads
      // them; pino takes a missing message from the error, so that one is the safe one too.
      logMethod(args, method) {
        const [first, ...rest] = args as unknown[];
        if (isErrorLike(first)) {
          const safe = safeError(first) as { message: string };
          return method.apply(this, [{ err: safe }, ...(rest.length > 0 ? rest : [safe.message])] as never);
        }
        return method.apply(this, [safeErrorsIn(first, 0), ...rest] as never);
      },
    },
  };
  if (destination) return pino(options, destination);
  // A person at a terminal reads lines; anything else (a file, a collector) gets JSON.
  const human = (process.env.LOG_FORMAT ?? (process.stdout.isTTY ? 'text' : 'json')) === 'text';
  return human ? pino(options, textDestination(process.stdout)) : pino(options);
}

/**
 * A logger of its own for one service run inside another process (`npm start`), writing where
 * `parent` writes at `parent`'s level: its lines say `service` once, the service's name. (A child
 * of `parent` would say it twice: pino writes a child's bindings after its parent's base.)
 */
export function serviceLogger(parent: Logger, service: string): Logger {
  const stream = (parent as unknown as Record<symbol, pino.DestinationStream>)[pino.symbols.streamSym];
  return createLogger(service, parent.level, stream);
}

const levelNames: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};
const quietKeys = new Set(['level', 'time', 'pid', 'hostname', 'name', 'service', 'msg']);

/** One readable line per record (`12:00:01 INFO  auth  message key=value`), the stack of an error below it. */
export function formatLogLine(line: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  const time = new Date(typeof record.time === 'number' ? record.time : Date.now()).toISOString().slice(11, 23);
  const level = (levelNames[record.level as number] ?? String(record.level)).padEnd(5);
  const fields: string[] = [];
  let stack = '';
  for (const [key, value] of Object.entries(record)) {
    if (quietKeys.has(key)) continue;
    const err = value as { stack?: unknown } | null;
    if (typeof err === 'object' && err !== null && typeof err.stack === 'string') stack = `\n${err.stack}`;
    else fields.push(`${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
  }
  const service = typeof record.service === 'string' ? record.service : '';
  return `${time} ${level} ${service.padEnd(14)} ${String(record.msg ?? '')}${fields.length > 0 ? ` ${fields.join(' ')}` : ''}${stack}\n`;
}

function textDestination(out: NodeJS.WritableStream): pino.DestinationStream {
  return {
    write(chunk: string) {
      for (const line of chunk.split('\n')) if (line) out.write(formatLogLine(line));
    },
  };
}

/** A logged value that went through `safeError` already. */
const safeMark = Symbol('safe-error');

/** SQLSTATE classes whose messages name only statement text and identifiers, never a value. */
const messageSafeClasses = new Set(['08', '23', '25', '28', '3D', '40', '42', '53', '55', '57']);

/** Fields of a Postgres error that name things, never values (`detail`, `where`, `internalQuery` can echo data). */
const pgNameFields = ['code', 'severity', 'constraint', 'table', 'column', 'schema', 'dataType', 'routine'] as const;

function isErrorLike(value: unknown): value is Error {
  return (
    value instanceof Error || (typeof value === 'object' && value !== null && 'stack' in value && 'message' in value)
  );
}

function isPgError(e: Record<string, unknown>): boolean {
  return typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code);
}

/** A message with quoted literals and byte dumps (where Postgres puts offending values) withheld. */
function withoutValues(message: string): string {
  return message.replace(/"(?:[^"]|"")*"/g, '"…"').replace(/\b0x[0-9a-f]+(?:\s+0x[0-9a-f]+)*/gi, '0x…');
}

/**
 * An error as it may be logged: name, message, stack, the SQLSTATE and the names Postgres gives
 * (constraint, table, column), the statement text of a failed query, and its cause, but never the
 * bound parameters of a statement (drizzle's `params`, PGlite's `params`, drizzle's message,
 * which prints them) nor what Postgres echoes of a value (`detail`, `where`, `internalQuery`,
 * quoted literals of data-exception messages). Any other own property of an error is left out.
 */
export function safeError(err: unknown, depth = 0): unknown {
  if (!isErrorLike(err)) return err;
  const e = err as unknown as Record<string | symbol, unknown>;
  if (e[safeMark]) return err;
  const type = typeof e.name === 'string' ? e.name : 'Error';
  let message = typeof e.message === 'string' ? e.message : '';
  const out: Record<string | symbol, unknown> = { type };
  if (typeof e.query === 'string' && 'params' in e) {
    // drizzle's DrizzleQueryError (and PGlite's errors): the statement text, never its parameters.
    out.query = e.query;
    if (/^Failed query:/.test(message)) message = `Failed query: ${e.query}`;
  }
  if (isPgError(e)) {
    for (const f of pgNameFields) if (typeof e[f] === 'string') out[f] = e[f];
    if (!messageSafeClasses.has((e.code as string).slice(0, 2))) message = withoutValues(message);
  } else if (typeof e.code === 'string' || typeof e.code === 'number') {
    out.code = e.code; // system errors (ECONNREFUSED), ApiError codes
  }
  for (const f of ['errno', 'syscall', 'address', 'port'] as const) {
    if (typeof e[f] === 'string' || typeof e[f] === 'number') out[f] = e[f];
  }
  out.message = message;
  if (typeof e.stack === 'string') {
    const frames = e.stack.split('\n').filter((line) => /^\s+at /.test(line));
    out.stack = [`${type}: ${message}`, ...frames].join('\n');
  }
  if (depth < 4) {
    if (e.cause !== undefined) out.cause = isErrorLike(e.cause) ? safeError(e.cause, depth + 1) : '[cause withheld]';
    if (Array.isArray(e.errors)) out.errors = e.errors.slice(0, 10).map((x) => safeError(x, depth + 1));
  }
  Object.defineProperty(out, safeMark, { value: true });
  return out;
}

/** The logged object with every error in it (a few levels deep) replaced by its safe form. */
function safeErrorsIn(value: unknown, depth: number): unknown {
  if (isErrorLike(value)) return safeError(value);
  if (depth >= 3 || typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    return value.some((v) => typeof v === 'object' && v !== null)
      ? value.map((v) => safeErrorsIn(v, depth + 1))
      : value;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return value;
  let copy: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'object' || v === null) continue;
    const safe = safeErrorsIn(v, depth + 1);
    if (safe !== v) {
      copy ??= { ...(value as Record<string, unknown>) };
      copy[k] = safe;
    }
  }
  return copy ?? value;
}
