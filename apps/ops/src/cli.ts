/**
 * The command line of `ziti-edge-ops`: which command, with what, checked before anything runs.
 * Pure: no I/O, so every rule is unit-tested (apps/ops/test/cli.test.ts).
 */

export const serviceNames = ['gateway', 'auth', 'pki-enrollment', 'policy', 'inventory', 'audit', 'fabric'] as const;
export type ServiceName = (typeof serviceNames)[number];

/** The services that own a database (all but the gateway and fabric). */
export const databaseServices = ['auth', 'pki-enrollment', 'policy', 'inventory', 'audit'] as const;
export type DatabaseService = (typeof databaseServices)[number];

export const commandNames = [
  'check-config',
  'migrate',
  'rotate-secret-key',
  'reset-admin-password',
  'restore',
  'replay-parked',
  'doctor',
] as const;
export type CommandName = (typeof commandNames)[number];

export type Command =
  | { name: 'help'; topic?: CommandName }
  | { name: 'check-config'; services: ServiceName[] }
  | { name: 'migrate'; services: DatabaseService[] }
  | { name: 'rotate-secret-key'; dryRun: boolean; batchSize: number }
  | {
      name: 'reset-admin-password';
      identity?: string;
      password: { file: string } | { stdin: true };
    }
  | { name: 'restore'; snapshot: string; force: boolean }
  | { name: 'replay-parked'; services: DatabaseService[] }
  | { name: 'doctor'; services: DatabaseService[]; skipIntegrity: boolean };

export interface Invocation {
  command: Command;
  /** Stack traces of unexpected failures (never secrets). */
  debug: boolean;
}

/** Exit codes: what an operator's script can tell apart. */
export const exitCodes = { ok: 0, failure: 1, usage: 2 } as const;

/** A command line that cannot run: every problem with it, and the usage to show. */
export class UsageError extends Error {
  constructor(
    readonly problems: string[],
    readonly topic?: CommandName,
  ) {
    super(problems.join('\n'));
    this.name = 'UsageError';
  }
}

const program = 'ziti-edge-ops';

const summaries: Record<CommandName, string> = {
  'check-config': 'check every environment variable the services read, all problems at once',
  migrate: "apply each service's database migrations",
  'rotate-secret-key': 'seal every stored secret again with the current ZITI_SECRET_KEY',
  'reset-admin-password': "set the default admin's (or an identity's) password",
  restore: 'load a snapshot (POST /database/snapshot) into the databases',
  'replay-parked': 'apply the events consumers parked, and say what is still parked',
  doctor: 'check dependencies, migrations, read models, outboxes and parked events',
};

const details: Record<CommandName, string> = {
  'check-config': `usage: ${program} check-config [--service <name>[,<name>…] | --all]

Runs the configuration reader of each service (the same one its process runs before it connects
to anything) on this environment, and lists every problem at once; connects to nothing.
Without --service or --all: the service in ZITI_SERVICE (as the image sets it), else all seven.
Services: ${serviceNames.join(', ')}.`,
  migrate: `usage: ${program} migrate [--service <name>[,<name>…] | --all]

Applies each service's migrations to its database (<SERVICE>_DATABASE_URL: AUTH_, PKI_, POLICY_,
INVENTORY_, AUDIT_DATABASE_URL) and says what it applied. Migrations run under a lock, once each;
running it again applies nothing. Without --service or --all: ZITI_SERVICE, else every service.`,
  'rotate-secret-key': `usage: ${program} rotate-secret-key [--dry-run] [--batch-size <n>]

Seals every stored secret again with the current key: auth's MFA secrets and recovery codes,
pki-enrollment's controller private keys and enrollment tokens and JWTs. The procedure:
  1. set ZITI_SECRET_KEY to the new key and ZITI_SECRET_KEY_PREVIOUS to the old one (comma-separated
     for several) on auth and pki-enrollment, and roll them out: both keys open, the new one seals;
  2. run this command with the same two variables and AUTH_DATABASE_URL, PKI_DATABASE_URL;
  3. once a run reports nothing left to re-seal, remove ZITI_SECRET_KEY_PREVIOUS and roll out again.
Batches of --batch-size rows (default 200), each one transaction under its rows' locks, while the
cluster runs; only what the old key sealed is rewritten, so an interrupted run resumes by running
again. --dry-run counts without writing. Exit 1 when a value opens with none of the keys.`,
  'reset-admin-password': `usage: ${program} reset-admin-password [--identity <name>] (--password-file <path> | --password-stdin)

Sets the password of the default admin's updb authenticator (or of the identity named --identity)
through auth's own path: the identity's auth policy, an argon2id hash, an authenticatorUpdated
event. The password is read from a file (one line) or standard input, never from the command line.
Needs AUTH_DATABASE_URL. Existing API sessions stay valid.`,
  restore: `usage: ${program} restore <snapshot> [--force]

Loads a snapshot that POST /database/snapshot wrote (ZITI_SNAPSHOT_DIR/<label>/<service>/: a
manifest and one JSON-lines file per table) into each service's database (<SERVICE>_DATABASE_URL).
<snapshot> is the <label> folder, one service's folder or its manifest.json. Refuses a snapshot
taken at another schema version (its migrations differ from this build's) and a target that holds
data or has other connections open (a running service), unless --force. Stop the services first;
each service is restored in one transaction, and its read models rebuild from their owners at its
next start. The cluster must run with the ZITI_SECRET_KEY the snapshot's data was sealed with.`,
  'replay-parked': `usage: ${program} replay-parked [--service <name>[,<name>…] | --all]

Applies again, with this build's handlers, the events each service's consumers parked
(parked_events: an event a handler kept failing on, or of a type or version the consumer did not
know), and reports per consumer what was applied and what is still parked, with why. Needs the
service's database and the same environment as the service (check-config). Exit 1 when events
are still parked. Without --service or --all: ZITI_SERVICE, else every service.`,
  doctor: `usage: ${program} doctor [--service <name>[,<name>…] | --all] [--skip-integrity]

One line per check, OK, WARN or FAIL: each service's Postgres (reachable, migrations current,
outbox backlog, parked events, consumers waiting for a resync), NATS and the JetStream event stream,
Redis (reachable, and whether it keeps the API sessions over a restart), and the read models
against their owners (each service's data-integrity check, over NATS; --skip-integrity leaves it
out). Exit 1 when a check fails.`,
};

/** The text `--help` prints: all commands, or one. */
export function usage(topic?: CommandName): string {
  if (topic)
    return `${details[topic]}\n\nOptions of every command: --debug (stack traces of unexpected failures), --help.`;
  const width = Math.max(...commandNames.map((c) => c.length));
  return [
    `usage: ${program} <command> [options]`,
    '',
    "The operator's command of the edge controller. It reads the same environment as the services",
    '(their database URLs, NATS_URL, REDIS_URL, ZITI_SECRET_KEY…) and prints no secret.',
    '',
    'Commands:',
    ...commandNames.map((c) => `  ${c.padEnd(width)}  ${summaries[c]}`),
    '',
    `${program} <command> --help shows a command's options. Exit codes: 0 ok, 1 failure, 2 usage.`,
  ].join('\n');
}

interface Flags {
  values: Map<string, string[]>;
  switches: Set<string>;
  positional: string[];
}

/** The options each command takes: flags with a value, and switches. */
const options: Record<CommandName, { values: string[]; switches: string[]; positional: number }> = {
  'check-config': { values: ['--service'], switches: ['--all'], positional: 0 },
  migrate: { values: ['--service'], switches: ['--all'], positional: 0 },
  'rotate-secret-key': { values: ['--batch-size'], switches: ['--dry-run'], positional: 0 },
  'reset-admin-password': {
    values: ['--identity', '--password-file'],
    switches: ['--password-stdin'],
    positional: 0,
  },
  restore: { values: [], switches: ['--force'], positional: 1 },
  'replay-parked': { values: ['--service'], switches: ['--all'], positional: 0 },
  doctor: { values: ['--service'], switches: ['--all', '--skip-integrity'], positional: 0 },
};

function splitFlags(args: string[], command: CommandName, problems: string[]): Flags {
  const spec = options[command];
  const flags: Flags = { values: new Map(), switches: new Set(), positional: [] };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') {
      flags.positional.push(...args.slice(i + 1));
      break;
    }
    if (!arg.startsWith('-') || arg === '-') {
      flags.positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (spec.values.includes(name)) {
      const value = eq > 0 ? arg.slice(eq + 1) : args[++i];
      if (value === undefined || (eq < 0 && value.startsWith('--'))) {
        problems.push(`${name} needs a value`);
        if (value?.startsWith('--')) i--;
        continue;
      }
      flags.values.set(name, [...(flags.values.get(name) ?? []), value]);
    } else if (spec.switches.includes(name)) {
      if (eq > 0) problems.push(`${name} takes no value`);
      flags.switches.add(name);
    } else if (name === '--password') {
      // Its value is never echoed (nor left to be reported as an unexpected argument).
      if (eq < 0 && args[i + 1] !== undefined && !args[i + 1]!.startsWith('-')) i++;
      problems.push(
        '--password is not taken: a password on the command line is seen by every user of the machine; use --password-file or --password-stdin',
      );
    } else {
      problems.push(`unknown option ${name} for ${command}`);
    }
  }
  if (flags.positional.length > spec.positional) {
    const extra = flags.positional.slice(spec.positional);
    const s = extra.length > 1 ? 's' : '';
    // What follows reset-admin-password may be a password typed on the command line: not repeated.
    problems.push(
      command === 'reset-admin-password'
        ? `unexpected argument${s} (not shown: ${extra.length > 1 ? 'they' : 'it'} may be a password)`
        : `unexpected argument${s}: ${extra.join(' ')}`,
    );
  }
  return flags;
}

function once(flags: Flags, name: string, problems: string[]): string | undefined {
  const values = flags.values.get(name);
  if (values && values.length > 1) problems.push(`${name} is given ${values.length} times`);
  return values?.[values.length - 1];
}

/**
 * The services named by `--service` (repeatable, comma-separated) or `--all`; neither: the one in
 * ZITI_SERVICE (the image sets it), else all of `allowed`.
 */
function selectServices<S extends ServiceName>(
  flags: Flags,
  allowed: readonly S[],
  env: NodeJS.ProcessEnv,
  problems: string[],
): S[] {
  const named = (flags.values.get('--service') ?? []).flatMap((v) => v.split(',')).map((s) => s.trim());
  if (flags.switches.has('--all')) {
    if (named.length > 0) problems.push('--service and --all exclude each other');
    return [...allowed];
  }
  if (named.length === 0) {
    const fromEnv = env.ZITI_SERVICE;
    if (fromEnv && (allowed as readonly string[]).includes(fromEnv)) return [fromEnv as S];
    return [...allowed];
  }
  const out: S[] = [];
  for (const name of named) {
    if (name === '') problems.push('--service needs a service name');
    else if (!(allowed as readonly string[]).includes(name)) {
      problems.push(
        (serviceNames as readonly string[]).includes(name)
          ? `${name} has no database: choose among ${allowed.join(', ')}`
          : `unknown service ${name}: expected ${allowed.join(', ')}`,
      );
    } else if (!out.includes(name as S)) out.push(name as S);
  }
  return out;
}

/** Parses `argv` (without node and the script); throws `UsageError` listing every problem. */
export function parseArgs(argv: readonly string[], env: NodeJS.ProcessEnv = {}): Invocation {
  const debug = argv.includes('--debug');
  const args = argv.filter((a) => a !== '--debug');
  const help = args.includes('--help') || args.includes('-h');
  const first = args.find((a) => !a.startsWith('-'));
  if (first === 'help') {
    const topic = args[args.indexOf('help') + 1];
    if (topic && !(commandNames as readonly string[]).includes(topic))
      throw new UsageError([`unknown command ${topic}`]);
    return { command: { name: 'help', ...(topic ? { topic: topic as CommandName } : {}) }, debug };
  }
  if (!first) {
    if (help) return { command: { name: 'help' }, debug };
    throw new UsageError(args.length > 0 ? [`unknown option ${args[0]}`] : ['no command given']);
  }
  if (!(commandNames as readonly string[]).includes(first)) throw new UsageError([`unknown command ${first}`]);
  const name = first as CommandName;
  if (help) return { command: { name: 'help', topic: name }, debug };
  const rest = [...args];
  rest.splice(args.indexOf(first), 1);
  const problems: string[] = [];
  const flags = splitFlags(rest, name, problems);
  let command: Command;
  switch (name) {
    case 'check-config':
      command = { name, services: selectServices(flags, serviceNames, env, problems) };
      break;
    case 'migrate':
    case 'replay-parked':
      command = { name, services: selectServices(flags, databaseServices, env, problems) };
      break;
    case 'doctor':
      command = {
        name,
        services: selectServices(flags, databaseServices, env, problems),
        skipIntegrity: flags.switches.has('--skip-integrity'),
      };
      break;
    case 'rotate-secret-key': {
      const raw = once(flags, '--batch-size', problems);
      const batchSize = raw === undefined ? 200 : Number(raw);
      if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000)
        problems.push('--batch-size must be an integer from 1 to 10000');
      command = { name, dryRun: flags.switches.has('--dry-run'), batchSize };
      break;
    }
    case 'reset-admin-password': {
      const identity = once(flags, '--identity', problems);
      const file = once(flags, '--password-file', problems);
      const stdin = flags.switches.has('--password-stdin');
      if (identity !== undefined && identity.trim() === '') problems.push('--identity needs a name');
      if (file !== undefined && stdin) problems.push('--password-file and --password-stdin exclude each other');
      if (file === undefined && !stdin)
        problems.push('the password comes from --password-file <path> or --password-stdin');
      if (file === '') problems.push('--password-file needs a path');
      command = {
        name,
        ...(identity !== undefined ? { identity } : {}),
        password: file !== undefined ? { file } : { stdin: true },
      };
      break;
    }
    case 'restore': {
      const snapshot = flags.positional[0];
      if (!snapshot)
        problems.push('restore needs the snapshot: the <label> folder under ZITI_SNAPSHOT_DIR, or a manifest.json');
      command = { name, snapshot: snapshot ?? '', force: flags.switches.has('--force') };
      break;
    }
  }
  if (problems.length > 0) throw new UsageError(problems, name);
  return { command, debug };
}
