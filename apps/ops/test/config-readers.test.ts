import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readAuditProcessConfig } from '@ziti/audit/config';
import { readAuthConfig, readAuthProcessConfig } from '@ziti/auth/config';
import { readFabricProcessConfig } from '@ziti/fabric/config';
import { readGatewayProcessConfig } from '@ziti/gateway/config';
import { readInventoryProcessConfig } from '@ziti/inventory/config';
import { readPkiConfig, readPkiProcessConfig } from '@ziti/pki-enrollment/config';
import { ConfigError, logLevels } from '@ziti/platform';
import { readPolicyProcessConfig } from '@ziti/policy/config';
import { describe, expect, it } from 'vitest';
import { databaseServices, serviceNames } from '../src/cli.ts';
import { configReaders, databaseVars } from '../src/support.ts';

/**
 * Every service's configuration reader, as its `main.ts` runs it before it connects to anything:
 * every problem of the environment in one error, none of them a value.
 */
const key = 'k'.repeat(43);
const complete: NodeJS.ProcessEnv = {
  NATS_URL: 'nats://127.0.0.1:4222',
  REDIS_URL: 'redis://127.0.0.1:6379',
  AUTH_DATABASE_URL: 'postgres://ziti:s3cret-pass@db:5432/auth',
  PKI_DATABASE_URL: 'postgres://ziti@db:5432/pki',
  POLICY_DATABASE_URL: 'postgres://ziti@db:5432/policy',
  INVENTORY_DATABASE_URL: 'postgresql://ziti@db/inventory',
  AUDIT_DATABASE_URL: 'postgres://ziti@db:5432/audit',
  ZITI_SECRET_KEY: key,
  ZITI_ADMIN_PASSWORD: 'admin-password',
};

function problemsOf(read: () => unknown): string[] {
  try {
    read();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('configuration readers', () => {
  it.each(serviceNames)('%s: a complete environment has no problem', (service) => {
    expect(problemsOf(() => configReaders[service](complete))).toEqual([]);
  });

  it.each(serviceNames)('%s: LOG_LEVEL=verbose is a problem that lists the levels', (service) => {
    expect(problemsOf(() => configReaders[service]({ ...complete, LOG_LEVEL: 'verbose' }))).toEqual([
      `LOG_LEVEL must be one of ${logLevels.join(', ')}`,
    ]);
  });

  it.each(databaseServices)('%s: its missing database URL is named', (service) => {
    const name = databaseVars[service];
    expect(problemsOf(() => configReaders[service]({ ...complete, [name]: undefined }))).toEqual([
      `${name} is required`,
    ]);
  });

  it('the gateway: missing NATS and Redis, a bad port and a bad log format, all at once', () => {
    const problems = problemsOf(() =>
      readGatewayProcessConfig({ ZITI_PORT: '99999', LOG_FORMAT: 'yaml', ZITI_BUS_NAMESPACE: 'a b' }),
    );
    expect(problems).toEqual([
      'LOG_FORMAT must be one of text, json',
      'ZITI_PORT must be an integer in 0..65535',
      'NATS_URL is required (a nats: or tls: URL)',
      "ZITI_BUS_NAMESPACE may hold only letters, digits, '_', '-' and inner dots",
      'REDIS_URL is required (a redis: or rediss: URL)',
    ]);
  });

  it('fabric: no database; NATS, Redis and its control port, every problem at once', () => {
    expect(
      problemsOf(() => readFabricProcessConfig({ NATS_URL: complete.NATS_URL, REDIS_URL: complete.REDIS_URL })),
    ).toEqual([]);
    expect(
      problemsOf(() =>
        readFabricProcessConfig({
          ZITI_CTRL_PORT: '70000',
          ZITI_CTRL_ADVERTISED_ADDRESS: 'tls://ctrl.example.com:6262',
          ZITI_CTRL_LEASE_SECONDS: '1',
          REDIS_URL: 'http://redis:6379',
        }),
      ),
    ).toEqual([
      'ZITI_CTRL_PORT must be an integer in 0..65535',
      'ZITI_CTRL_ADVERTISED_ADDRESS must be host:port or host (no scheme, path or space)',
      'ZITI_CTRL_LEASE_SECONDS must be an integer in 3..600',
      'NATS_URL is required (a nats: or tls: URL)',
      'REDIS_URL must be a redis: or rediss: URL',
    ]);
    const config = readFabricProcessConfig({ ...complete, ZITI_BIND: '0.0.0.0', ZITI_CTRL_PORT: '7262' });
    expect(config.settings).toMatchObject({ bind: '0.0.0.0', port: 7262, advertisedAddress: 'localhost:7262' });
  });

  it('auth: several problems at once, none of them repeating a value', () => {
    const err = (() => {
      try {
        readAuthProcessConfig({
          ...complete,
          LOG_LEVEL: 'loud',
          AUTH_DATABASE_URL: 'mysql://root:hunter2@db/auth',
          REDIS_URL: 'not a url',
          ZITI_SECRET_KEY: 'too-short-secret',
          ZITI_SECRET_KEY_PREVIOUS: `${'o'.repeat(40)},short-old-key`,
          ZITI_HASH_CONCURRENCY: '0',
          ZITI_ADVERTISED_ADDRESS: 'https://ctrl.example.com/',
          DATABASE_POOL_SIZE: 'many',
        });
      } catch (e) {
        return e as ConfigError;
      }
      throw new Error('accepted');
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.problems).toEqual([
      `LOG_LEVEL must be one of ${logLevels.join(', ')}`,
      'DATABASE_POOL_SIZE must be an integer in 1..500',
      'AUTH_DATABASE_URL must be a postgres: or postgresql: URL',
      'ZITI_HASH_CONCURRENCY must be an integer in 1..64',
      'ZITI_ADVERTISED_ADDRESS must be host:port or host (no scheme, path or space)',
      'ZITI_SECRET_KEY must be at least 32 characters',
      'ZITI_SECRET_KEY_PREVIOUS: 1 of its 2 comma-separated keys is shorter than 32 characters',
      'REDIS_URL is not a URL (expected redis://host:port or rediss://host:port)',
    ]);
    for (const secret of ['hunter2', 'too-short-secret', 'short-old-key', 'not a url'])
      expect(err.message).not.toContain(secret);
  });

  it('auth: the previous keys are read, the current one left out of them', () => {
    const old = 'o'.repeat(40);
    const config = readAuthConfig({ ZITI_SECRET_KEY: key, ZITI_SECRET_KEY_PREVIOUS: ` ${old} , ${key}` });
    expect(config.secretKey).toBe(key);
    expect(config.previousSecretKeys).toEqual([old]);
  });

  it('auth migrate: only the database and the bus are needed', () => {
    expect(
      problemsOf(() =>
        readAuthProcessConfig(
          { NATS_URL: complete.NATS_URL, AUTH_DATABASE_URL: complete.AUTH_DATABASE_URL },
          { migrateOnly: true },
        ),
      ),
    ).toEqual([]);
    expect(problemsOf(() => readAuthProcessConfig({}, { migrateOnly: true }))).toEqual([
      'NATS_URL is required',
      'AUTH_DATABASE_URL is required',
    ]);
  });

  it('pki-enrollment: a signer file that cannot be read and an unpaired one are problems, not stack traces', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ops-config-'));
    const cert = join(dir, 'signer.pem');
    writeFileSync(cert, 'not a certificate');
    expect(problemsOf(() => readPkiConfig({ ZITI_SECRET_KEY: key, ZITI_PKI_SIGNER_CERT_FILE: cert }))).toEqual([
      'ZITI_PKI_SIGNER_CERT_FILE and ZITI_PKI_SIGNER_KEY_FILE go together: set both or neither',
    ]);
    expect(
      problemsOf(() =>
        readPkiConfig({
          ZITI_SECRET_KEY: key,
          ZITI_PKI_SIGNER_CERT_FILE: cert,
          ZITI_PKI_SIGNER_KEY_FILE: join(dir, 'missing.key'),
          ZITI_ENROLLMENT_DURATION_MINUTES: '1',
        }),
      ),
    ).toEqual([
      'ZITI_ENROLLMENT_DURATION_MINUTES must be an integer in 5..525600',
      'ZITI_PKI_SIGNER_KEY_FILE cannot be read (no such file)',
      'ZITI_PKI_SIGNER_CERT_FILE holds no PEM certificate',
    ]);
    expect(problemsOf(() => readPkiProcessConfig({ ...complete, ZITI_SECRET_KEY: undefined }))).toEqual([
      'ZITI_SECRET_KEY is required',
    ]);
  });

  it('policy and inventory: the bus and their databases, with their formats', () => {
    expect(
      problemsOf(() => readPolicyProcessConfig({ NATS_URL: 'http://nats:4222', POLICY_DATABASE_URL: 'postgres://' })),
    ).toEqual(['NATS_URL must be a nats: or tls: URL', 'POLICY_DATABASE_URL names no host']);
    expect(problemsOf(() => readInventoryProcessConfig({ HEALTH_PORT: '-1', HEALTH_BIND: 'a b' }))).toEqual([
      'HEALTH_BIND must be an IP address or a host name',
      'NATS_URL is required',
      'INVENTORY_DATABASE_URL is required',
      'HEALTH_PORT must be an integer in 0..65535',
    ]);
  });

  it('audit: its retention and its sinks with the rest, at once', () => {
    expect(
      problemsOf(() =>
        readAuditProcessConfig({
          ...complete,
          AUDIT_DATABASE_URL: undefined,
          ZITI_AUDIT_RETENTION_DAYS: '0',
          ZITI_EVENTS_FILE: 'relative.jsonl',
        }),
      ),
    ).toEqual([
      'AUDIT_DATABASE_URL is required',
      'ZITI_AUDIT_RETENTION_DAYS must be an integer in 1..36500',
      'ZITI_EVENTS_FILE must be an absolute path',
    ]);
  });
});
