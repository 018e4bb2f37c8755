import { ConfigError } from '@ziti/platform';
import { type Invocation, UsageError, exitCodes, parseArgs, usage } from './cli.ts';
import { CommandFailure, type Io, describeError } from './support.ts';

/** Runs the command `argv` names; its exit code (0 ok, 1 failure, 2 usage). Never throws. */
export async function run(argv: readonly string[], io: Io): Promise<number> {
  let invocation: Invocation;
  try {
    invocation = parseArgs(argv, io.env);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    for (const problem of err.problems) io.err(`ziti-edge-ops: ${problem}`);
    io.err(`run: ziti-edge-ops ${err.topic ? `${err.topic} ` : ''}--help`);
    return exitCodes.usage;
  }
  const { command, debug } = invocation;
  try {
    switch (command.name) {
      case 'help':
        io.out(usage(command.topic));
        return exitCodes.ok;
      case 'check-config':
        return await (await import('./commands/check-config.ts')).checkConfig(command.services, io);
      case 'migrate':
        return await (await import('./commands/migrate.ts')).migrateCommand(command.services, io);
      case 'rotate-secret-key':
        return await (await import('./commands/rotate-secret-key.ts')).rotateSecretKey(command, io);
      case 'reset-admin-password':
        return await (await import('./commands/reset-admin-password.ts')).resetAdminPassword(command, io);
      case 'restore':
        return await (await import('./commands/restore.ts')).restore(command, io);
      case 'replay-parked':
        return await (await import('./commands/replay-parked.ts')).replayParked(command.services, io, debug);
      case 'doctor':
        return await (await import('./commands/doctor.ts')).doctor(command, io);
    }
  } catch (err) {
    const name = command.name;
    if (err instanceof CommandFailure) for (const line of err.lines) io.err(`${name}: ${line}`);
    else if (err instanceof ConfigError) {
      io.err(`${name}: invalid configuration:`);
      for (const problem of err.problems) io.err(`  ${problem}`);
    } else {
      io.err(`${name} failed: ${describeError(err)}`);
      if (debug && err instanceof Error && err.stack) io.err(err.stack);
      else io.err('(--debug shows where)');
    }
    return exitCodes.failure;
  }
}
