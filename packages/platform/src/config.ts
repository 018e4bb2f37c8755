/**
 * Reads environment configuration once at start. Every missing or malformed key is reported in
 * one error, so an operator fixes a deployment in one go.
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
};
