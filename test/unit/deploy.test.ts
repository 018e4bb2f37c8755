import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseReplicas } from '../../deploy/local-cluster.ts';

/** deploy/'s static checks run with the suite; `npm run cluster`'s replica choice. */
const root = fileURLToPath(new URL('../..', import.meta.url));

describe('deploy/check.ts', () => {
  it('passes on the chart, compose file and entrypoint as they are', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'deploy/check.ts'], {
      cwd: root,
    });
    expect(stdout).toMatch(/^deploy check: ok/);
  });
});

describe('npm run cluster --replicas', () => {
  it('reads replicas per service', () => {
    expect(parseReplicas('gateway=2, auth=3')).toEqual({ gateway: 2, auth: 3 });
    expect(parseReplicas('')).toEqual({});
  });

  it('refuses unknown services and counts that are not 1 to 16', () => {
    expect(() => parseReplicas('gatway=2')).toThrow(/unknown service gatway/);
    for (const bad of ['auth=0', 'auth=x', 'auth', 'auth=17', 'auth=1.5'])
      expect(() => parseReplicas(bad), bad).toThrow(/not a count/);
  });
});
