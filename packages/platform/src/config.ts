import { isIP } from 'node:net';

/**
 * Reads environment configuration once at start. Every missing or malformed key is reported in
 * one error, so an operator fixes a deployment in one go. A problem names the variable and what it
 * must be, never its value (a URL or a key may hold a secret).
 */
export type EnvSpec<T> = { [K in keyof T]: (raw: string | undefined, name: string) => T[K] };

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

export function readEnv<T>(spec: EnvSpec<T>, env: NodeJS.ProcessEnv = process.env): T {
  const problems: string[] = [];
  const out = {} as T;
  for (const key of Object.keys(spec) as (keyof T & string)[]) {
    try {
      out[key] = spec[key](env[key] === '' ? undefined : env[key], key);
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return out;
}

/** The levels pino knows, most severe first (`silent` logs nothing). */
export const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof logLevels)[number];

/** `host:port`, `host` or `[v6]:port`, with no scheme, path or space. */
function isHostPort(value: string): boolean {
  const v6 = /^\[([0-9A-Fa-f:.]+)\](?::(\d{1,5}))?$/.exec(value);
  if (v6) return isIP(v6[1]!) === 6 && (v6[2] === undefined || Number(v6[2]) <= 65535);
  const m = /^([A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(value);
  return Boolean(m) && (m![2] === undefined || Number(m![2]) <= 65535);
}

export const env = {
  string:
    (fallback?: string) =>
    (raw: string | undefined, name: string): string => {
      if (raw !== undefined) return raw;
      if (fallback !== undefined) return fallback;
      throw new Error(`${name} is required`);
    },
  optional:
    () =>
    (raw: string | undefined): string | undefined =>
      raw,
  int:
    (fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
    (raw: string | undefined, name: string): number => {
      if (raw === undefined) return fallback;
      const n = Number(raw);
      if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be an integer in ${min}..${max}`);
      return n;
    },
  secret:
    (minLength: number) =>
    (raw: string | undefined, name: string): string => {
      if (raw === undefined) throw new Error(`${name} is required`);
      if (raw.length < minLength) throw new Error(`${name} must be at least ${minLength} characters`);
      return raw;
    },
  /** Comma-separated secrets, each at least `minLength` characters; none: an empty list. */
  secretList:
    (minLength: number) =>
    (raw: string | undefined, name: string): string[] => {
      if (raw === undefined) return [];
      const items = raw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      const short = items.filter((s) => s.length < minLength).length;
      if (short > 0)
        throw new Error(
          `${name}: ${short} of its ${items.length} comma-separated keys ${short === 1 ? 'is' : 'are'} shorter than ${minLength} characters`,
        );
      return items;
    },
  /** One of `values`; unset: `fallback` (required when there is none). */
  oneOf:
    <V extends string>(values: readonly V[], fallback?: V) =>
    (raw: string | undefined, name: string): V => {
      if (raw === undefined) {
        if (fallback !== undefined) return fallback;
        throw new Error(`${name} is required (one of ${values.join(', ')})`);
      }
      // Exactly as written: what reads the value (pino's level, the log format) compares it so.
      if (!(values as readonly string[]).includes(raw)) throw new Error(`${name} must be one of ${values.join(', ')}`);
      return raw as V;
    },
  /** `LOG_LEVEL`: one of pino's levels (default `info`). */
  logLevel: () => env.oneOf<LogLevel>(logLevels, 'info'),
  /**
   * A URL of one of `schemes` (`postgres:`, `nats:`…); unset: `fallback`, else required. The
   * problem never repeats the value: a URL may carry a password.
   */
  url:
    (schemes: readonly string[], fallback?: string) =>
    (raw: string | undefined, name: string): string => {
      const value = raw ?? fallback;
      if (value === undefined) throw new Error(`${name} is required (a ${schemes.join(' or ')} URL)`);
      let url: URL;
      try {
        url = new URL(value);
      } catch {
        throw new Error(`${name} is not a URL (expected ${schemes.map((s) => `${s}//host:port`).join(' or ')})`);
      }
      if (!schemes.includes(url.protocol)) throw new Error(`${name} must be a ${schemes.join(' or ')} URL`);
      if (!url.hostname && !url.searchParams.has('host')) throw new Error(`${name} names no host`);
      return value;
    },
  /** `host:port` (or `host`) with no scheme or path; unset: `fallback`. */
  hostPort:
    (fallback?: string) =>
    (raw: string | undefined, name: string): string | undefined => {
      if (raw === undefined) return fallback;
      if (!isHostPort(raw.trim())) throw new Error(`${name} must be host:port or host (no scheme, path or space)`);
      return raw.trim();
    },
  /** An IP address or a host name (a listener's bind address); unset: `fallback`. */
  host:
    (fallback: string) =>
    (raw: string | undefined, name: string): string => {
      const value = raw ?? fallback;
      if (isIP(value) === 0 && !/^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$/.test(value))
        throw new Error(`${name} must be an IP address or a host name`);
      return value;
    },
  /** A name made of letters, digits, `_`, `-` and inner dots (a prefix of subjects and keys); unset: `fallback`. */
  token:
    (fallback: string) =>
    (raw: string | undefined, name: string): string => {
      if (raw === undefined) return fallback;
      if (!/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(raw))
        throw new Error(`${name} may hold only letters, digits, '_', '-' and inner dots`);
      return raw;
    },
};

/**
 * Gathers the problems of several readers, so a process reports every one of them at once: each
 * reader that throws a `ConfigError` adds its problems (any other error adds its message), and
 * `done` throws one `ConfigError` with all of them.
 */
export class ConfigProblems {
  readonly problems: string[] = [];

  /** Runs one reader; undefined when it failed (its problems are kept). */
  take<T>(read: () => T): T | undefined {
    try {
      return read();
    } catch (err) {
      if (err instanceof ConfigError) this.problems.push(...err.problems);
      else this.problems.push(err instanceof Error ? err.message : String(err));
      return undefined;
    }
  }

  add(...problems: string[]): void {
    this.problems.push(...problems);
  }

  /** Throws the one `ConfigError` when a problem was found. */
  done(): void {
    if (this.problems.length > 0) throw new ConfigError([...new Set(this.problems)]);
  }
}

/** What every process reads besides its own settings: its logs and its health listener's address. */
export interface ProcessEnv {
  logLevel: LogLevel;
  /** `text` or `json`; unset: `text` at a terminal, else `json`. */
  logFormat: 'text' | 'json' | undefined;
  healthBind: string;
}

/** `LOG_LEVEL`, `LOG_FORMAT` and `HEALTH_BIND` (the logger and the health listener read them as they are). */
export function readProcessEnv(source: NodeJS.ProcessEnv = process.env): ProcessEnv {
  const raw = readEnv(
    {
      LOG_LEVEL: env.logLevel(),
      LOG_FORMAT: (value: string | undefined, name: string) =>
        value === undefined ? undefined : env.oneOf(['text', 'json'] as const)(value, name),
      HEALTH_BIND: env.host('127.0.0.1'),
    },
    source,
  );
  return { logLevel: raw.LOG_LEVEL, logFormat: raw.LOG_FORMAT, healthBind: raw.HEALTH_BIND };
}

/** The URL schemes each dependency accepts. */
export const urlSchemes = {
  postgres: ['postgres:', 'postgresql:'],
  nats: ['nats:', 'tls:'],
  redis: ['redis:', 'rediss:'],
} as const;

/**
 * The format of the cluster's connection variables beyond their presence (`readServiceEnv` and
 * the mains check that): `NATS_URL`, the service's database URL and `ZITI_BUS_NAMESPACE`.
 */
export function readClusterUrls(databaseVar: string | undefined, source: NodeJS.ProcessEnv = process.env): void {
  const problems = new ConfigProblems();
  const set = (name: string) => source[name] !== undefined && source[name] !== '';
  if (set('NATS_URL')) problems.take(() => env.url(urlSchemes.nats)(source.NATS_URL, 'NATS_URL'));
  if (databaseVar && set(databaseVar))
    problems.take(() => env.url(urlSchemes.postgres)(source[databaseVar], databaseVar));
  if (set('ZITI_BUS_NAMESPACE')) problems.take(() => env.token('')(source.ZITI_BUS_NAMESPACE, 'ZITI_BUS_NAMESPACE'));
  problems.done();
}

/** `REDIS_URL` (required) and `REDIS_KEY_PREFIX` (default `ziti:`): where the API sessions live. */
export function readRedisEnv(source: NodeJS.ProcessEnv = process.env): { url: string; keyPrefix: string } {
  const raw = readEnv({ REDIS_URL: env.url(urlSchemes.redis), REDIS_KEY_PREFIX: env.string('ziti:') }, source);
  return { url: raw.REDIS_URL, keyPrefix: raw.REDIS_KEY_PREFIX };
}

/**
 * The at-rest key (`ZITI_SECRET_KEY`, at least 32 characters) and the keys it replaced, still
 * accepted to open what they sealed until `rotate-secret-key` re-sealed it
 * (`ZITI_SECRET_KEY_PREVIOUS`, comma-separated).
 */
export function readSecretKeys(source: NodeJS.ProcessEnv = process.env): { current: string; previous: string[] } {
  const raw = readEnv({ ZITI_SECRET_KEY: env.secret(32), ZITI_SECRET_KEY_PREVIOUS: env.secretList(32) }, source);
  return {
    current: raw.ZITI_SECRET_KEY,
    // The current key listed again adds nothing.
    previous: raw.ZITI_SECRET_KEY_PREVIOUS.filter((k) => k !== raw.ZITI_SECRET_KEY),
  };
}

/**
 * Reads a process's configuration before it connects to anything: on a configuration problem it
 * prints the one message naming every problem (no stack trace) and exits with 1.
 */
export function configOrExit<T>(name: string, read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${name}: ${err.message}\n`);
    process.exit(1);
  }
}

/**
 * What a process's entry does when it cannot start (a dependency refused its first connection):
 * one line naming the reason, no stack trace, exit 1. The platform's supervisor (Kubernetes,
 * compose) starts it again.
 */
export function exitOnStartFailure(name: string): (err: unknown) => never {
  return (err) => {
    const e = err as { message?: unknown; code?: unknown };
    const message = typeof e?.message === 'string' && e.message ? e.message : String(err);
    const code = typeof e?.code === 'string' && !message.includes(e.code) ? ` (${e.code})` : '';
    process.stderr.write(
      `${name}: could not start: ${message.replace(/\b[a-z][a-z0-9+.-]*:\/\/\S*/gi, '<url>')}${code}\n`,
    );
    process.exit(1);
  };
}
