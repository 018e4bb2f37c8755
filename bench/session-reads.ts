/**
 * The other sessions' reads of `npm run bench -- login`, run as a process of their own: other
 * users are other clients, so their requests must not wait behind the login storm's load generator
 * (one Node event loop answering both would add its own queueing to the reads' latency).
 * `GET /edge/client/v1/current-identity` at a fixed overall rate over a few connections, rotating
 * over the given session tokens. Prints `ready` once loaded, then reads for `warmup` seconds, then
 * for `seconds` measured, and prints the measured run's autocannon result as one JSON line.
 * Usage: node --import tsx bench/session-reads.ts <baseUrl> <rate> <warmup> <seconds> <connections> <token,...>
 */
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

async function main() {
  const [url, rate, warmup, seconds, connections, tokenList] = process.argv.slice(2);
  if (!url || !rate || !warmup || !seconds || !connections || !tokenList) throw new Error('usage: see the file header');
  const tokens = tokenList.split(',');
  let next = 0;
  const run = (duration: number) =>
    autocannon({
      url,
      connections: Number(connections),
      overallRate: Number(rate),
      duration,
      requests: [
        {
          method: 'GET',
          path: '/edge/client/v1/current-identity',
          setupRequest: (req) => ({ ...req, headers: { 'zt-session': tokens[next++ % tokens.length]! } }),
        },
      ],
    });
  process.stdout.write('ready\n');
  if (Number(warmup) > 0) await run(Number(warmup));
  process.stdout.write(`${JSON.stringify(await run(Number(seconds)))}\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
