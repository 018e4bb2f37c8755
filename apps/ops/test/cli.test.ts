import { describe, expect, it } from 'vitest';
import { UsageError, commandNames, databaseServices, parseArgs, serviceNames, usage } from '../src/cli.ts';

function problems(argv: string[], env: NodeJS.ProcessEnv = {}): string[] {
  try {
    parseArgs(argv, env);
  } catch (err) {
    if (err instanceof UsageError) return err.problems;
    throw err;
  }
  throw new Error(`${argv.join(' ')} was accepted`);
}

describe('ziti-edge-ops command line', () => {
  it('shows the commands with --help, and each command with <command> --help or help <command>', () => {
    expect(parseArgs(['--help']).command).toEqual({ name: 'help' });
    expect(parseArgs(['-h']).command).toEqual({ name: 'help' });
    expect(parseArgs(['doctor', '--help']).command).toEqual({ name: 'help', topic: 'doctor' });
    expect(parseArgs(['help', 'restore']).command).toEqual({ name: 'help', topic: 'restore' });
    for (const name of commandNames) {
      expect(usage()).toContain(name);
      expect(usage(name)).toContain(`usage: ziti-edge-ops ${name}`);
    }
  });

  it('refuses no command, an unknown one and an unknown option', () => {
    expect(problems([])).toEqual(['no command given']);
    expect(problems(['frobnicate'])).toEqual(['unknown command frobnicate']);
    expect(problems(['help', 'frobnicate'])).toEqual(['unknown command frobnicate']);
    expect(problems(['--verbose'])).toEqual(['unknown option --verbose']);
    expect(problems(['migrate', '--verbose'])).toEqual(['unknown option --verbose for migrate']);
  });

  it('lists every problem of a command line at once', () => {
    expect(problems(['rotate-secret-key', '--batch-size', '0', '--dry-run=yes', 'extra'])).toEqual([
      '--dry-run takes no value',
      'unexpected argument: extra',
      '--batch-size must be an integer from 1 to 10000',
    ]);
  });

  it('selects services by --service (repeated or comma-separated), --all, ZITI_SERVICE, else all', () => {
    expect(parseArgs(['check-config']).command).toEqual({ name: 'check-config', services: [...serviceNames] });
    expect(parseArgs(['check-config'], { ZITI_SERVICE: 'gateway' }).command).toEqual({
      name: 'check-config',
      services: ['gateway'],
    });
    expect(parseArgs(['check-config', '--all'], { ZITI_SERVICE: 'gateway' }).command).toMatchObject({
      services: [...serviceNames],
    });
    expect(parseArgs(['migrate', '--service', 'auth,policy', '--service=auth']).command).toEqual({
      name: 'migrate',
      services: ['auth', 'policy'],
    });
    // The gateway has no database: migrate in its container means every database, on purpose only.
    expect(parseArgs(['migrate'], { ZITI_SERVICE: 'gateway' }).command).toMatchObject({
      services: [...databaseServices],
    });
    expect(problems(['migrate', '--service', 'gateway'])).toEqual([
      'gateway has no database: choose among auth, pki-enrollment, policy, inventory, audit',
    ]);
    // Nor has fabric (the router edge): its configuration is checked, its database commands refuse it.
    expect(parseArgs(['check-config'], { ZITI_SERVICE: 'fabric' }).command).toEqual({
      name: 'check-config',
      services: ['fabric'],
    });
    expect(parseArgs(['check-config', '--service', 'fabric,gateway']).command).toEqual({
      name: 'check-config',
      services: ['fabric', 'gateway'],
    });
    expect(parseArgs(['doctor'], { ZITI_SERVICE: 'fabric' }).command).toMatchObject({
      services: [...databaseServices],
    });
    for (const command of ['migrate', 'replay-parked', 'doctor'])
      expect(problems([command, '--service', 'fabric'])).toEqual([
        'fabric has no database: choose among auth, pki-enrollment, policy, inventory, audit',
      ]);
    expect(databaseServices).not.toContain('fabric');
    expect(problems(['doctor', '--service', 'nope', '--all'])).toEqual(['--service and --all exclude each other']);
    expect(problems(['replay-parked', '--service'])).toEqual(['--service needs a value']);
    expect(problems(['check-config', '--service', 'nope'])).toEqual([
      'unknown service nope: expected gateway, auth, pki-enrollment, policy, inventory, audit, fabric',
    ]);
  });

  it('takes rotate-secret-key options', () => {
    expect(parseArgs(['rotate-secret-key']).command).toEqual({
      name: 'rotate-secret-key',
      dryRun: false,
      batchSize: 200,
    });
    expect(parseArgs(['rotate-secret-key', '--dry-run', '--batch-size=50']).command).toEqual({
      name: 'rotate-secret-key',
      dryRun: true,
      batchSize: 50,
    });
  });

  it('never takes a password on the command line', () => {
    expect(parseArgs(['reset-admin-password', '--password-file', '/run/secrets/pw']).command).toEqual({
      name: 'reset-admin-password',
      password: { file: '/run/secrets/pw' },
    });
    expect(parseArgs(['reset-admin-password', '--identity', 'ops', '--password-stdin']).command).toEqual({
      name: 'reset-admin-password',
      identity: 'ops',
      password: { stdin: true },
    });
    expect(problems(['reset-admin-password'])).toEqual([
      'the password comes from --password-file <path> or --password-stdin',
    ]);
    // A password typed on the command line anyway is never repeated in the answer.
    const refused = problems(['reset-admin-password', '--password', 'hunter22']);
    expect(refused).toEqual([
      '--password is not taken: a password on the command line is seen by every user of the machine; use --password-file or --password-stdin',
      'the password comes from --password-file <path> or --password-stdin',
    ]);
    const stray = problems(['reset-admin-password', 'hunter22', '--password-stdin']);
    expect(stray).toEqual(['unexpected argument (not shown: it may be a password)']);
    expect([...refused, ...stray].join('\n')).not.toContain('hunter22');
    expect(problems(['reset-admin-password', '--password-file', 'a', '--password-stdin', '--identity', ' '])).toEqual([
      '--identity needs a name',
      '--password-file and --password-stdin exclude each other',
    ]);
  });

  it('takes the snapshot of restore as its argument', () => {
    expect(parseArgs(['restore', '/var/lib/ziti/snapshots/2026-01-01', '--force']).command).toEqual({
      name: 'restore',
      snapshot: '/var/lib/ziti/snapshots/2026-01-01',
      force: true,
    });
    expect(problems(['restore'])).toEqual([
      'restore needs the snapshot: the <label> folder under ZITI_SNAPSHOT_DIR, or a manifest.json',
    ]);
    expect(problems(['restore', 'a', 'b'])).toEqual(['unexpected argument: b']);
  });

  it('takes --debug anywhere', () => {
    expect(parseArgs(['--debug', 'doctor', '--skip-integrity'])).toEqual({
      command: { name: 'doctor', services: [...databaseServices], skipIntegrity: true },
      debug: true,
    });
  });
});
