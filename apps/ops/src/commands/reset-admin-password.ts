import { lstatSync, readFileSync } from 'node:fs';
import { ApiError } from '@ziti/contracts';
import {
  Argon2PasswordHasher,
  AuthenticatorService,
  type AuthStores,
  bindAuthStores,
  isDisabled,
  passwordLimits,
} from '@ziti/auth/app';
import { createUnitOfWork } from '@ziti/platform';
import { CommandFailure, type Io, describeError, openServiceDatabase, requireDatabaseUrls } from '../support.ts';

/** The password from a file (its first line) or standard input; never from the command line. */
async function readPassword(source: { file: string } | { stdin: true }, io: Io): Promise<string> {
  let text: string;
  if ('file' in source) {
    let mode: number;
    try {
      const stat = lstatSync(source.file);
      if (!stat.isFile()) throw new CommandFailure([`--password-file ${source.file} is not a regular file`]);
      mode = stat.mode;
      text = readFileSync(source.file, 'utf8');
    } catch (err) {
      if (err instanceof CommandFailure) throw err;
      const code = (err as NodeJS.ErrnoException).code;
      throw new CommandFailure([
        `--password-file ${source.file} cannot be read (${code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (code ?? 'error')})`,
      ]);
    }
    if ((mode & 0o077) !== 0)
      io.err(`note: ${source.file} can be read by others than its owner; keep password files at mode 0600`);
  } else {
    text = await io.readStdin();
  }
  // One line: what follows the first line break (an editor's final newline) is not part of it.
  const password = text.split(/\r?\n/)[0] ?? '';
  if (password === '') throw new CommandFailure(['the password is empty']);
  if (password.length < passwordLimits.min || password.length > passwordLimits.max)
    throw new CommandFailure([`the password must be ${passwordLimits.min} to ${passwordLimits.max} characters`]);
  return password;
}

const noSessionStore = {
  endByIdentity: () => Promise.reject(new Error('reset-admin-password reaches no API-session store')),
  forget: () => Promise.reject(new Error('reset-admin-password reaches no API-session store')),
};

/**
 * Sets the password of the default admin's updb authenticator, or of the named identity's,
 * through auth's own path (`AuthenticatorService.update`: the identity's auth policy, an argon2id
 * hash, `authenticatorUpdated` in the outbox, which the running auth publishes).
 */
export async function resetAdminPassword(
  options: { identity?: string; password: { file: string } | { stdin: true } },
  io: Io,
): Promise<number> {
  requireDatabaseUrls(['auth'], io.env);
  const password = await readPassword(options.password, io);
  const database = await openServiceDatabase('auth', io.env);
  // One hash, at normal priority: nothing else runs here.
  const hasher = new Argon2PasswordHasher(1, 1, 0);
  try {
    const work = createUnitOfWork<AuthStores>(database, undefined, 'auth', bindAuthStores);
    const target = await work(async (s) => {
      const identity = options.identity
        ? await s.identities.findByName(options.identity)
        : await s.identities.findDefaultAdmin();
      if (!identity)
        throw new CommandFailure([
          options.identity
            ? `no identity is named ${JSON.stringify(options.identity)}`
            : 'there is no default admin yet (auth creates it at its first start)',
        ]);
      const updb = (await s.authenticators.listByIdentity(identity.id)).find((a) => a.method === 'updb');
      if (!updb) throw new CommandFailure([`${identity.name} has no updb (password) authenticator`]);
      return { identity, authenticator: updb };
    });
    // Only `update` of a password runs here, which ends no API session and registers no
    // certificate: this command reaches neither a session store nor pki-enrollment.
    const refusesCertificates = { vouchesFor: async () => false };
    const authenticators = new AuthenticatorService(work, hasher, noSessionStore, refusesCertificates);
    try {
      await authenticators.update(target.authenticator.id, { password }, 'patch');
    } catch (err) {
      if (err instanceof ApiError) throw new CommandFailure([`the password was refused: ${describeError(err)}`]);
      throw err;
    }
    io.out(
      `the password of ${target.identity.name} (updb username ${target.authenticator.username}) is set; ` +
        'its API sessions stay valid until they end',
    );
    if (isDisabled(target.identity)) {
      const until = target.identity.disabledUntil;
      io.out(
        `note: ${target.identity.name} is disabled${until ? ` until ${until.toISOString()}` : ''}: it cannot log in`,
      );
    }
    return 0;
  } finally {
    await database.close();
  }
}
