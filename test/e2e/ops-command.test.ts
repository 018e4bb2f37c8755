import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGuardrails, generate } from 'otplib';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventTypes } from '@ziti/contracts';
import { type E2e, startE2e } from '../support/e2e.ts';
import { infra, uniqueName, waitFor } from '../support/infra.ts';

/**
 * `ziti-edge-ops` against the local cluster, every command as docs/operations.md shows it
 * (`npm run ops -- <command>`, with the services' environment): the configuration check, migrate,
 * doctor, the admin password reset, parked events replayed, the secret key rotated under live
 * sessions, and a snapshot restored into an empty cluster that then serves its data.
 */
const root = join(import.meta.dirname, '..', '..');
const snapshotDir = mkdtempSync(join(tmpdir(), 'ops-e2e-snapshots-'));
const oldKey = randomBytes(32).toString('base64url');
const newKey = randomBytes(32).toString('base64url');
let e: E2e;
let other: E2e | undefined;
/** The default admin's password (set anew by reset-admin-password). */
let adminPassword = '';
const extraDatabases: string[] = [];

const guardrails = createGuardrails({ MIN_SECRET_BYTES: 10 });
const totp = (secret: string) => generate({ secret, guardrails });

interface OpsResult {
  code: number | null;
  out: string;
  err: string;
}

/** `npm run ops -- <args>` with `env` (and nothing else of this process's environment), `stdin` piped in. */
function ops(args: string[], env: Record<string, string | undefined>, stdin?: string): Promise<OpsResult> {
  return new Promise((resolve, reject) => {
    const clean = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined)) as Record<string, string>;
    const child = spawn('npm', ['run', '-s', 'ops', '--', ...args], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...clean },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (err += d));
    child.stdin.end(stdin ?? '');
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`ziti-edge-ops ${args.join(' ')} did not finish`));
    }, 150_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

/** The environment the services of `cluster` run with: what an operator's job for it has. */
const clusterEnv = (cluster = e): Record<string, string | undefined> => ({ ...cluster.cluster.env });

async function sql<T = Record<string, unknown>>(url: string, text: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text, params)).rows as T[];
  } finally {
    await c.end();
  }
}

const mgmt = (path: string, init: Record<string, unknown> = {}, token = e.adminToken) =>
  e.call('management', { path, token, ...init });

const passwordLogin = (username: string, password: string, target = e) =>
  target.call('client', { method: 'POST', path: '/authenticate?method=password', body: { username, password } });

/** A full login with the password and then a TOTP code: the session token. */
async function mfaLogin(u: { username: string; password: string }, secret: string, target = e): Promise<string> {
  const first = await passwordLogin(u.username, u.password, target);
  expect(first.status).toBe(200);
  const token = first.json.data.token as string;
  const second = await target.call('client', {
    method: 'POST',
    path: '/authenticate/mfa',
    token,
    body: { code: await totp(secret) },
  });
  expect(second.status, second.text).toBe(200);
  return token;
}

beforeAll(async () => {
  e = await startE2e({ env: { ZITI_SNAPSHOT_DIR: snapshotDir, ZITI_SECRET_KEY: oldKey } });
  adminPassword = e.cluster.adminPassword;
});

afterAll(async () => {
  await other?.stop();
  await e?.stop();
  for (const url of extraDatabases) {
    const name = new URL(url).pathname.slice(1);
    await sql(infra.postgresUrl, `drop database if exists "${name}" with (force)`).catch(() => undefined);
  }
});

describe('ziti-edge-ops', () => {
  it('--help lists the commands; a wrong command line is a usage error (exit 2)', async () => {
    const help = await ops(['--help'], {});
    expect(help.code).toBe(0);
    for (const c of [
      'check-config',
      'migrate',
      'rotate-secret-key',
      'reset-admin-password',
      'restore',
      'replay-parked',
      'doctor',
    ])
      expect(help.out).toContain(c);
    const wrong = await ops(['migrate', '--service', 'gateway', '--frobnicate'], {});
    expect(wrong.code).toBe(2);
    expect(wrong.err).toContain('unknown option --frobnicate for migrate');
    expect(wrong.err).toContain('gateway has no database');
  });

  it('check-config: the cluster environment passes; a broken one lists every problem at once', async () => {
    const good = await ops(['check-config', '--all'], clusterEnv());
    expect(good.code, good.err).toBe(0);
    expect(good.out.trim().split('\n')).toEqual([
      'gateway: OK',
      'auth: OK',
      'pki-enrollment: OK',
      'policy: OK',
      'inventory: OK',
      'audit: OK',
      'fabric: OK',
    ]);
    const bad = await ops(['check-config', '--service', 'auth'], {
      ...clusterEnv(),
      LOG_LEVEL: 'verbose',
      REDIS_URL: undefined,
      ZITI_SECRET_KEY: 'too-short',
    });
    expect(bad.code).toBe(1);
    expect(bad.out).toBe(
      [
        'auth: 3 problems',
        '  LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent',
        '  ZITI_SECRET_KEY must be at least 32 characters',
        '  REDIS_URL is required (a redis: or rediss: URL)',
        '',
      ].join('\n'),
    );
    expect(bad.out + bad.err).not.toContain('too-short');
    expect(bad.err).not.toMatch(/^\s+at /m);
  });

  it('migrate: every database is current', async () => {
    const result = await ops(['migrate', '--all'], clusterEnv());
    expect(result.code, result.out + result.err).toBe(0);
    for (const s of ['auth', 'pki-enrollment', 'policy', 'inventory', 'audit'])
      expect(result.out).toMatch(new RegExp(`^${s}: up to date \\(\\d+ migrations? of its own, all applied\\)$`, 'm'));
  });

  it('doctor: every dependency, migration and read model checks out; a dead NATS fails', async () => {
    const result = await ops(['doctor'], clusterEnv());
    const lines = result.out.trim().split('\n');
    expect(
      lines.every((l) => /^(OK|WARN|FAIL) /.test(l)),
      result.out,
    ).toBe(true);
    expect(
      lines.filter((l) => l.startsWith('FAIL')),
      result.out,
    ).toEqual([]);
    expect(result.code).toBe(0);
    for (const s of ['auth', 'pki-enrollment', 'policy', 'inventory', 'audit']) {
      expect(result.out).toContain(`OK   postgres ${s}: reachable`);
      expect(result.out).toMatch(new RegExp(`^OK   migrations ${s}: current`, 'm'));
      expect(result.out).toContain(`OK   integrity ${s}: its data and read models agree with their owners`);
    }
    expect(result.out).toMatch(/^OK {3}event stream: ZITI_EVENTS_\S+ present/m);
    // Each read model against its owner's position (issue 35): in step, or within 2 s of it.
    for (const consumer of ['policy-from-auth', 'policy-from-inventory', 'auth-from-pki-enrollment'])
      expect(result.out).toMatch(new RegExp(`^OK {3}lag ${consumer}: `, 'm'));
    expect(result.out).toContain('OK   redis: reachable');
    // Whether this machine's Redis persists decides OK or WARN (never FAIL): sessions work either way.
    expect(result.out).toMatch(/^(OK|WARN) redis persistence: /m);

    const dead = await ops(['doctor', '--skip-integrity'], { ...clusterEnv(), NATS_URL: 'nats://127.0.0.1:1' });
    expect(dead.code).toBe(1);
    expect(dead.out).toMatch(/^FAIL nats: cannot reach NATS_URL: /m);
  });

  it('the controller says at start that Redis keeps no data over a restart (when it does not)', async () => {
    const logs = readdirSync(e.cluster.logDir).filter((f) => f.startsWith('auth-') || f.startsWith('gateway-'));
    expect(logs.length).toBeGreaterThan(0);
    const text = logs.map((f) => readFileSync(join(e.cluster.logDir, f), 'utf8')).join('\n');
    const doctor = await ops(['doctor', '--skip-integrity'], clusterEnv());
    if (doctor.out.includes('WARN redis persistence')) expect(text).toContain('Redis keeps no data over a restart');
    else expect(text).not.toContain('Redis keeps no data over a restart');
  });

  it('reset-admin-password: from a file for the default admin, from stdin for a named identity', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ops-e2e-pw-'));
    const file = join(dir, 'admin-password');
    const fresh = `new-${randomBytes(9).toString('base64url')}`;
    e.secrets.add(fresh);
    writeFileSync(file, `${fresh}\n`, { mode: 0o600 });
    chmodSync(file, 0o600);
    const reset = await ops(['reset-admin-password', '--password-file', file], clusterEnv());
    expect(reset.code, reset.err).toBe(0);
    expect(reset.out).toContain('the password of Default Admin (updb username admin) is set');
    expect(reset.out + reset.err).not.toContain(fresh);
    expect((await passwordLogin('admin', adminPassword)).status).toBe(401);
    expect((await passwordLogin('admin', fresh)).status).toBe(200);
    // The restored cluster below is logged in to with it.
    adminPassword = fresh;

    const user = await e.createUser();
    const other = `other-${randomBytes(9).toString('base64url')}`;
    e.secrets.add(other);
    const name = (await mgmt(`/identities/${user.id}`)).json.data.name as string;
    const viaStdin = await ops(
      ['reset-admin-password', '--identity', name, '--password-stdin'],
      clusterEnv(),
      `${other}\n`,
    );
    expect(viaStdin.code, viaStdin.err).toBe(0);
    expect((await passwordLogin(user.username, other)).status).toBe(200);

    const unknown = await ops(
      ['reset-admin-password', '--identity', 'nobody-here', '--password-file', file],
      clusterEnv(),
    );
    expect(unknown.code).toBe(1);
    expect(unknown.err).toContain('no identity is named "nobody-here"');
  });

  it('replay-parked: applies what can be applied now, and says what is still parked and why', async () => {
    const policyDb = e.cluster.databases.policy!;
    const auditDb = e.cluster.databases.audit!;
    const id = await e.createIdentity();
    // The identity.created event as audit applied it (auth's outbox drops an event once published):
    // its position and the state it carried.
    const [row] = await waitFor(
      () =>
        sql<{ position: string; version: number; payload: unknown; created_at: Date }>(
          auditDb,
          `select source_sequence::text as position, $2::int as version, state as payload, updated_at as created_at
             from entity_states where entity_type = 'identities' and id = $1`,
          [id, eventTypes.identityCreated.version],
        ).then((rows) => (rows.length > 0 ? rows : undefined)),
      'the identity.created event',
    );
    const envelope = (type: string, position: number) => ({
      id: `auth:${position}`,
      type,
      version: row!.version,
      source: 'auth',
      sequence: position,
      occurredAt: new Date(row!.created_at).toISOString(),
      data: row!.payload,
    });
    const position = Number(row!.position);
    const park = (type: string, at: number, reason: string) =>
      sql(
        policyDb,
        `insert into parked_events (consumer, source, position, type, version, reason, envelope)
         values ('policy-from-auth', 'auth', $1, $2, $3, $4, $5::jsonb)`,
        [at, type, row!.version, reason, JSON.stringify(envelope(type, at))],
      );
    await park('identity.created', position, 'handler failed 5 times: the database was down');
    await park('identity.frobnicated', 999_999_999, 'event type identity.frobnicated is unknown to this version');

    const first = await ops(['replay-parked', '--service', 'policy'], clusterEnv());
    expect(first.code).toBe(1);
    expect(first.out).toBe(
      [
        'policy policy-from-auth: applied 1, 1 still parked',
        '  1 event of auth: event type identity.frobnicated is unknown to this version',
        '',
      ].join('\n'),
    );
    expect(first.err).toContain('1 event still parked');
    const doctor = await ops(['doctor', '--service', 'policy', '--skip-integrity'], clusterEnv());
    expect(doctor.out).toMatch(
      /^WARN parked events policy: 1 event parked \(policy-from-auth: 1, event type identity\.frobnicated/m,
    );

    await sql(policyDb, `delete from parked_events where type = 'identity.frobnicated'`);
    const second = await ops(['replay-parked', '--all'], clusterEnv());
    expect(second.code, second.out + second.err).toBe(0);
    expect(second.out.trim().split('\n')).toEqual([
      'auth: nothing parked',
      'pki-enrollment: nothing parked',
      'policy: nothing parked',
      'inventory: nothing parked',
      'audit: nothing parked',
    ]);
  });

  it('rotate-secret-key: re-seals under live sessions, after which the new key alone opens everything', async () => {
    // Sealed with the old key: an MFA secret, an enrollment's token and JWT, the controller's keys.
    const u = await e.createUser();
    expect((await e.call('client', { method: 'POST', path: '/current-identity/mfa', token: u.token })).status).toBe(
      201,
    );
    const detail = (await e.call('client', { path: '/current-identity/mfa', token: u.token })).json.data;
    const secret = new URL(detail.provisioningUrl).searchParams.get('secret')!;
    const verified = await e.call('client', {
      method: 'POST',
      path: '/current-identity/mfa/verify',
      token: u.token,
      body: { code: await totp(secret) },
    });
    expect(verified.status).toBe(200);
    const enrolled = await e.createIdentity({ enrollment: { ott: true } });
    const enrollment = (await mgmt(`/identities/${enrolled}`)).json.data.enrollment.ott;
    const jwt = (await mgmt(`/enrollments/${enrollment.id}`)).json.data.jwt as string;
    const liveSession = await mfaLogin(u, secret);

    // 1. The new key with the old one still accepted, rolled out to auth and pki-enrollment (the
    //    cluster starts every process with its `env`).
    const env = e.cluster.env as Record<string, string>;
    env.ZITI_SECRET_KEY = newKey;
    env.ZITI_SECRET_KEY_PREVIOUS = oldKey;
    for (const s of ['auth', 'pki-enrollment'] as const) {
      await e.cluster.stopService(s);
      await e.cluster.startService(s);
    }
    expect((await mgmt('/identities', {}, e.adminToken)).status).toBe(200);
    expect((await e.call('client', { path: '/current-identity', token: liveSession })).status).toBe(200);

    // 2. The rotation, while the cluster runs.
    const dry = await ops(['rotate-secret-key', '--dry-run'], clusterEnv());
    expect(dry.code, dry.err).toBe(0);
    expect(dry.out).toMatch(/^dry run: \d+ values would be re-sealed; nothing was written$/m);
    const rotated = await ops(['rotate-secret-key', '--batch-size', '2'], clusterEnv());
    expect(rotated.code, rotated.err).toBe(0);
    expect(rotated.out).toMatch(
      /^auth mfa: \d+ rows?, \d+ sealed values: [1-9]\d* re-sealed with the current key, 0 already under it$/m,
    );
    expect(rotated.out).toMatch(
      /^pki-enrollment pki_material: 3 rows, 3 sealed values: 3 re-sealed with the current key, 0 already under it$/m,
    );
    expect(rotated.out).toMatch(/^pki-enrollment enrollments: \d+ rows?, \d+ sealed values: [1-9]\d* re-sealed/m);
    expect(rotated.out + rotated.err).not.toContain(newKey);
    expect(rotated.out + rotated.err).not.toContain(oldKey);
    const again = await ops(['rotate-secret-key'], clusterEnv());
    expect(again.out).toContain(
      'every sealed value opens with ZITI_SECRET_KEY alone: ZITI_SECRET_KEY_PREVIOUS can be removed',
    );

    // The old key alone opens nothing any more.
    const old = await ops(['rotate-secret-key', '--dry-run'], {
      ...clusterEnv(),
      ZITI_SECRET_KEY: oldKey,
      ZITI_SECRET_KEY_PREVIOUS: undefined,
    });
    expect(old.code).toBe(1);
    expect(old.err).toContain('opened with none of the keys');

    // 3. The old key removed: sessions, MFA logins, enrollments and the PKI carry on with the new key alone.
    delete env.ZITI_SECRET_KEY_PREVIOUS;
    for (const s of ['auth', 'pki-enrollment'] as const) {
      await e.cluster.stopService(s);
      await e.cluster.startService(s);
    }
    expect((await e.call('client', { path: '/current-identity', token: liveSession })).status).toBe(200);
    expect((await mgmt('/identities')).status).toBe(200);
    await mfaLogin(u, secret);
    expect((await mgmt(`/enrollments/${enrollment.id}`)).json.data.jwt).toBe(jwt);
    const check = await ops(['rotate-secret-key', '--dry-run'], clusterEnv());
    expect(check.code).toBe(0);
    expect(check.out).toContain(
      'ZITI_SECRET_KEY_PREVIOUS is not set: checking that ZITI_SECRET_KEY alone opens every sealed value',
    );
    expect(check.out).toContain('dry run: 0 values would be re-sealed');
  }, 240_000);

  it('restore: refuses a live cluster, and fills an empty one that then serves the snapshot data', async () => {
    // Data to find again: an identity with a role, a service, a dial policy between them.
    const attr = uniqueName('role');
    const identityId = await e.createIdentity({ roleAttributes: [attr] });
    const service = await mgmt('/services', {
      method: 'POST',
      body: { name: uniqueName('svc'), encryptionRequired: true, roleAttributes: [attr] },
    });
    expect(service.status).toBe(201);
    const policy = await mgmt('/service-policies', {
      method: 'POST',
      body: {
        name: uniqueName('dial'),
        type: 'Dial',
        semantic: 'AnyOf',
        identityRoles: [`#${attr}`],
        serviceRoles: [`#${attr}`],
      },
    });
    expect(policy.status).toBe(201);
    const serviceId = service.json.data.id as string;
    await waitFor(
      async () =>
        ((await mgmt(`/identities/${identityId}/services`)).json.data as { id: string }[]).some(
          (s) => s.id === serviceId,
        ),
      'the policy to reach the identity',
    );
    expect((await mgmt('/database/snapshot', { method: 'POST' })).status).toBe(200);
    const [label] = readdirSync(snapshotDir);
    const snapshot = join(snapshotDir, label!);

    // Into the running cluster: refused, with every reason.
    const refused = await ops(['restore', snapshot], clusterEnv());
    expect(refused.code).toBe(1);
    expect(refused.err).toContain('restore: nothing was restored:');
    expect(refused.err).toMatch(/auth: its database holds data/);
    expect(refused.err).toMatch(/other connections? to its database (is|are) open/);
    expect(refused.err).toMatch(/the event stream ZITI_EVENTS_\S+ holds \d+ events/);

    // Into an empty cluster: new databases, a new namespace (a new event stream).
    const namespace = uniqueName('e2e');
    const prefix = namespace.toLowerCase().replace(/[^a-z0-9_]/g, '_');
    const target: Record<string, string | undefined> = {
      ...clusterEnv(),
      ZITI_BUS_NAMESPACE: namespace,
      REDIS_KEY_PREFIX: `${namespace}:`,
    };
    for (const [variable, db] of [
      ['AUTH_DATABASE_URL', 'auth'],
      ['PKI_DATABASE_URL', 'pki'],
      ['POLICY_DATABASE_URL', 'policy'],
      ['INVENTORY_DATABASE_URL', 'inventory'],
      ['AUDIT_DATABASE_URL', 'audit'],
    ] as const) {
      await sql(infra.postgresUrl, `create database "${prefix}_${db}"`);
      const url = new URL(infra.postgresUrl);
      url.pathname = `/${prefix}_${db}`;
      target[variable] = url.toString();
      extraDatabases.push(url.toString());
    }
    const restored = await ops(['restore', snapshot], target);
    expect(restored.code, restored.err).toBe(0);
    for (const s of ['auth', 'pki-enrollment', 'policy', 'inventory', 'audit'])
      expect(restored.out).toMatch(new RegExp(`^${s}: restored \\d+ rows in \\d+ tables from ${label}`, 'm'));
    expect(restored.out).not.toContain('not in the snapshot');

    other = await startE2e({
      namespace,
      env: { ZITI_SNAPSHOT_DIR: snapshotDir, ZITI_SECRET_KEY: newKey },
      adminPassword,
    });
    const ask = (path: string) => other!.call('management', { path, token: other!.adminToken });
    expect((await ask(`/identities/${identityId}`)).json.data.roleAttributes).toEqual([attr]);
    expect((await ask(`/services/${serviceId}`)).status).toBe(200);
    expect((await ask(`/service-policies/${policy.json.data.id}`)).status).toBe(200);
    // policy's view of who reaches what: rebuilt from the restored owners.
    await waitFor(
      async () =>
        ((await ask(`/identities/${identityId}/services`)).json.data as { id: string }[]).some(
          (s) => s.id === serviceId,
        ),
      'the restored policy to reach the identity',
    );
    const doctor = await ops(['doctor'], target);
    expect(
      doctor.out.split('\n').filter((l) => l.startsWith('FAIL')),
      doctor.out,
    ).toEqual([]);
    expect(doctor.code).toBe(0);
  }, 300_000);
});
