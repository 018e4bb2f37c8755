import { ensureTemplate } from './template.ts';

/**
 * `npm ci` (postinstall, through start.mjs --prepare): makes the template database cluster now so
 * that the first `npm start` does not run initdb. Never fails the install: `npm start` makes
 * whatever is missing on first need.
 */
export async function prepare(): Promise<void> {
  const t = performance.now();
  try {
    const dir = await ensureTemplate();
    process.stdout.write(
      `standalone: template database cluster ready in ${Math.round(performance.now() - t)} ms (${dir})\n`,
    );
  } catch (err) {
    process.stderr.write(`standalone: no template database cluster (npm start makes it on first need): ${err}\n`);
  }
}
