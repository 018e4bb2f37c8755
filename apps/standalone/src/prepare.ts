import { prepareTemplates } from './template.ts';

/**
 * `npm ci` (postinstall, through start.mjs --prepare): makes the template database clusters now
 * (the empty one, each service's with its migrations applied, and a ready copy of each) so that the
 * first `npm start` neither runs initdb nor migrates nor copies a cluster file by file. Never fails
 * the install: `npm start` makes whatever is missing on first need.
 */
export async function prepare(): Promise<void> {
  const t = performance.now();
  try {
    const dirs = await prepareTemplates();
    process.stdout.write(
      `standalone: template database clusters ready in ${Math.round(performance.now() - t)} ms (${dirs.join(', ')})\n`,
    );
  } catch (err) {
    process.stderr.write(`standalone: no template database cluster (npm start makes it on first need): ${err}\n`);
  }
}
