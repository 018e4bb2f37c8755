import { readFileSync, readdirSync, statSync } from 'node:fs';
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
const roles = ['transport', 'mapper', 'domain', 'ports', 'store', 'adapter', 'wiring'];
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
  /** What the floors say of `code` in `filePath`: no-restricted-imports and the path-aware rules (tools/eslint-floors.js). */
  async function problems(filePath: string, code: string) {
    const [result] = await eslint.lintText(code, { filePath: join(root, filePath) });
    return result!.messages
      .filter((m) => m.ruleId === 'no-restricted-imports' || m.ruleId?.startsWith('floors/'))
      .map((m) => m.message);
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
    ["import { sessionsWiring } from './sessions.wiring.ts';", 'wirings'],
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
    ["import { configsWiring } from './configs.wiring.ts';", 'do not read stores'],
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

  it.each([
    [
      'services/policy/src/sessions/probe.domain.ts',
      "import { x } from '../../../inventory/src/configs/configs.domain.ts';",
    ],
    ['services/policy/src/sessions/probe.transport.ts', "import { createInventoryService } from '@ziti/inventory';"],
    ['services/policy/src/sessions/probe.store.ts', "import { bindAuthStores } from '@ziti/auth/app';"],
    ['services/gateway/src/pipeline/probe.adapter.ts', "export { x } from '../../../fabric/src/app.ts';"],
    ['services/gateway/src/probe.ts', "export const f = () => import('../../audit/src/config.ts');"],
    [
      'services/auth/src/credentials/probe.int.test.ts',
      "import { makeCsr } from '../../../pki-enrollment/test/support.ts';",
    ],
    [
      'services/auth/test/probe.test.ts',
      "import * as policy from '../../policy/src/read-models/read-models.store.ts';",
    ],
  ])('%s: a service that imports another service (%s) fails lint', async (file, line) => {
    const found = await problems(file, `${line}\nexport const y = 1;`);
    expect(found.join('\n')).toContain("another service's files");
  });

  it('a service may import its own files, the packages and the shared test support', async () => {
    const code = [
      "import { x } from '../services/service-view.domain.ts';",
      "import { y } from '../../test/support.ts';",
      "import { z } from '../../../../test/support/infra.ts';",
      "import { makeCsr } from '../../../../test/support/x509.ts';",
      "import { reply } from '@ziti/platform';",
      "import { operations } from '@ziti/contracts';",
      'export const v = [x, y, z, makeCsr, reply, operations];',
    ].join('\n');
    expect(await problems('services/policy/src/sessions/probe.test.ts', code)).toEqual([]);
  });

  it.each([
    [
      'apps/ops/src/commands/probe.ts',
      "import { AuthenticatorService } from '@ziti/auth/authenticators/authenticators.domain';",
    ],
    ['apps/ops/src/probe.ts', "export const f = () => import('@ziti/policy/sessions/sessions.store');"],
    ['apps/ops/test/probe.test.ts', "export * from '@ziti/inventory/operations.transport';"],
    ['apps/standalone/src/probe.ts', "import { RedisCircuitStore } from '@ziti/fabric/circuits/redis-circuit.store';"],
    ['apps/standalone/src/probe.ts', "import { createAuthService } from '../../../services/auth/src/app.ts';"],
    ['apps/ops/src/commands/probe.ts', "import { migrations } from '../../../../services/policy/src/app';"],
  ])('%s: an app that imports %s fails lint', async (file, line) => {
    const found = await problems(file, `${line}\nexport const y = 1;`);
    expect(found.join('\n')).toContain('only through its entry points');
  });

  it('an app may import a service through the entry points its package.json exports', async () => {
    const code = [
      "import { createAuthService } from '@ziti/auth';",
      "import { migrations } from '@ziti/policy/app';",
      "import { readGatewayConfig } from '@ziti/gateway/config';",
      "import { MemoryCircuitStore } from '@ziti/fabric/circuits/memory-circuit.store';",
      "import { reply } from '@ziti/platform';",
      "import { Io } from '../support.ts';",
      "export const f = () => import('@ziti/inventory/app');",
      'export const v = [createAuthService, migrations, readGatewayConfig, MemoryCircuitStore, reply, Io];',
    ].join('\n');
    expect(await problems('apps/ops/src/commands/probe.ts', code)).toEqual([]);
  });

  it.each(services)(
    '%s: its package exports only named entry points (no pattern making every file public)',
    (service) => {
      const { exports } = JSON.parse(readFileSync(join(root, 'services', service, 'package.json'), 'utf8')) as {
        exports: Record<string, string>;
      };
      expect(Object.keys(exports)).toEqual(expect.arrayContaining(['.', './app', './config']));
      for (const [subpath, target] of Object.entries(exports)) expect(`${subpath} ${target}`).not.toContain('*');
    },
  );

  it.each([
    [
      'services/policy/src/sessions/probe.store.ts',
      "import { PgClientEdgeRouters } from '../client-edge-routers/client-edge-routers.store.ts';",
    ],
    [
      'services/policy/src/what-if/probe.store.ts',
      "import { PgPostureCheckStore } from '../posture/posture-checks.store';",
    ],
    [
      'services/policy/src/relations/probe.store.ts',
      "import { postureCheckFromRow, PgPostureCheckStore } from '../posture/posture-checks.store.ts';",
    ],
    [
      'services/auth/src/authenticators/probe.store.ts',
      "import * as identities from '../identities/identities.store.ts';",
    ],
    [
      'services/auth/src/authenticators/probe.store.ts',
      "export { PgIdentityStore } from '../identities/identities.store.ts';",
    ],
    // A SQL-pieces exception covers only the names it lists: the kind's store itself fails.
    [
      'services/policy/src/relations/relations.store.ts',
      "import { servicePolicyTable, pgServicePolicies } from '../policies/service-policies.store.ts';",
    ],
    // The relation lists and what-if read with SQL pieces or get what they need from app.ts (issue 33).
    [
      'services/policy/src/relations/relations.store.ts',
      "import { pgEdgeRouterPolicies } from '../policies/edge-router-policies.store.ts';",
    ],
    [
      'services/policy/src/what-if/what-if.store.ts',
      "import { PgAccessLinks } from '../access/access-links.store.ts';",
    ],
    // Session creation reads its own facts: its store builds no other resource's store (issue 33).
    [
      'services/policy/src/sessions/sessions.store.ts',
      "import { PgClientEdgeRouters } from '../client-edge-routers/client-edge-routers.store.ts';",
    ],
    [
      'services/policy/src/sessions/sessions.store.ts',
      "import { PgPostureData } from '../posture/posture-data.store.ts';",
    ],
  ])('%s: a store that imports %s fails lint', async (file, line) => {
    const found = await problems(file, `${line}\nexport const y = 1;`);
    expect(found.join('\n')).toContain("a store does not build another resource's store");
  });

  it('a store may import its own folder, shared/, the SQL pieces eslint.config.js names and ports', async () => {
    const code = [
      "import { factsRows } from './sessions.store.ts';",
      "import { linkTableOf } from '../access/link-tables.store.ts';",
      "import { roleAttributesOf } from '../shared/role-attributes.store.ts';",
      "import { postureCheckFromRow } from '../posture/posture-checks.store.ts';",
      "import { edgeRouterQuery } from '../read-models/read-model-queries.store.ts';",
      "import type { AccessLinks } from '../access/access.ports.ts';",
      'export const v = [factsRows, linkTableOf, roleAttributesOf, postureCheckFromRow, edgeRouterQuery];',
      'export type W = AccessLinks;',
    ].join('\n');
    expect(await problems('services/policy/src/sessions/probe.store.ts', code)).toEqual([]);
    // The composition root builds every store.
    const root =
      "import { PgClientEdgeRouters } from './client-edge-routers/client-edge-routers.store.ts';\nexport const v = PgClientEdgeRouters;";
    expect(await problems('services/policy/src/app.ts', root)).toEqual([]);
  });
});
