import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

/**
 * The shape every service shares (ADR 0020): `src/app.ts`, `main.ts` and `config.ts` at the root;
 * everything else in a resource folder (or `shared/`), each file named by its role, tests beside
 * what they test. ESLint's floors key on those roles, so a file without one would escape them.
 */
const root = join(import.meta.dirname, '..', '..');
const services = readdirSync(join(root, 'services')).filter((d) => statSync(join(root, 'services', d)).isDirectory());
const roles = ['transport', 'mapper', 'domain', 'ports', 'store', 'adapter'];
const roleFile = new RegExp(`^[a-z0-9-]+\\.(${roles.join('|')})\\.ts$`);
const testFile = /^[a-z0-9-]+(\.[a-z0-9-]+)*\.test\.ts$/;
const rootFiles = new Set(['app.ts', 'main.ts', 'config.ts']);

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

describe('service layout', () => {
  it.each(services)('%s: every source file names its role', (service) => {
    const src = join(root, 'services', service, 'src');
    const misplaced = files(src)
      .filter((path) => path.endsWith('.ts'))
      .map((path) => relative(src, path))
      .filter((path) => {
        const name = path.split('/').pop()!;
        if (testFile.test(name)) return false;
        if (!path.includes('/')) return !rootFiles.has(name) && !roleFile.test(name);
        return !roleFile.test(name);
      });
    expect(misplaced).toEqual([]);
  });
});

describe('lint floors', () => {
  const eslint = new ESLint({ cwd: root });
  async function problems(filePath: string, code: string) {
    const [result] = await eslint.lintText(code, { filePath: join(root, filePath) });
    return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
  }

  it('a domain file may import its ports, contracts and pure platform modules', async () => {
    const code = [
      "import type { IdentityStore } from './identities.ports.ts';",
      "import type { Identity } from '../shared/model.domain.ts';",
      "import { newId } from '@ziti/platform/ids';",
      "import { z } from 'zod';",
      'export const x: [IdentityStore?, Identity?, typeof newId?, typeof z?] = [];',
    ].join('\n');
    expect(await problems('services/auth/src/identities/probe.domain.ts', code)).toEqual([]);
  });

  it.each([
    ["import { PgIdentityStore } from './identities.store.ts';", 'stores'],
    ["import { x } from '../sessions/sessions.transport.ts';", 'transports'],
    ["import { Argon2 } from '../passwords/argon2.adapter.ts';", 'adapters'],
    ["import { Pool } from 'pg';", 'I/O'],
    ["import { sql } from 'drizzle-orm';", 'I/O'],
    ["import { connect } from 'nats';", 'I/O'],
    ["import { createServer } from 'node:http';", 'I/O'],
    ["import { queryRows } from '@ziti/platform';", 'pure platform module'],
    ["import { openDatabase } from '@ziti/platform/db/database';", 'runs I/O'],
    ["import { build } from '../app.ts';", 'composition root'],
  ])('a domain file that imports %s fails lint', async (line, reason) => {
    for (const file of [
      'services/policy/src/sessions/probe.domain.ts',
      'services/policy/src/sessions/probe.ports.ts',
    ]) {
      const found = await problems(file, `${line}\nexport const y = 1;`);
      expect(found.join('\n')).toContain(reason);
    }
  });

  it.each([
    ["import { PgConfigStore } from './configs.store.ts';", 'do not read stores'],
    ["import { PgConfigStore } from '../configs/configs.store';", 'do not read stores'],
    ["import { Pool } from 'pg';", 'SQL drivers'],
    ["import { queryRows } from '@ziti/platform';", 'do not run SQL'],
    ["import { listRows } from '@ziti/platform/db/list';", 'do not run SQL'],
  ])('a transport that imports %s fails lint', async (line, reason) => {
    for (const file of [
      'services/inventory/src/configs/probe.transport.ts',
      'services/inventory/src/configs/probe.mapper.ts',
    ]) {
      const found = await problems(file, `${line}\nexport const y = 1;`);
      expect(found.join('\n')).toContain(reason);
    }
  });

  it('a transport may call its domain service and map with contracts', async () => {
    const code = [
      "import type { ConfigService } from './configs.domain.ts';",
      "import { configDetail } from './configs.mapper.ts';",
      "import { reply } from '@ziti/platform';",
      'export const x: [ConfigService?, typeof configDetail?, typeof reply?] = [];',
    ].join('\n');
    expect(await problems('services/inventory/src/configs/probe.transport.ts', code)).toEqual([]);
  });
});
