import 'reflect-metadata';
import process from 'node:process';
import { run } from './run.ts';

/**
 * `ziti-edge-ops` (apps/ops/bin/ziti-edge-ops.mjs, `npm run ops -- <command>`): the operator's
 * command. Reads the services' environment, prints to stdout (the report) and stderr (problems),
 * and exits 0 (ok), 1 (failure) or 2 (usage).
 */
async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('password (then Enter, Ctrl-D): ');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const code = await run(process.argv.slice(2), {
  env: process.env,
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  readStdin,
});
// Pools and connections a command opened may keep the event loop alive: the report is written.
process.exit(code);
