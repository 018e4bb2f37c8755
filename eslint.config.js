// One lint setup for the whole tree (typescript-eslint supports the pinned TypeScript 5.9).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { floors } from './tools/eslint-floors.js';

/** Platform modules that run I/O (or import one that does): domain code does not import them. */
const impurePlatformModules = [
  'index',
  'bus/nats-bus',
  'db/database',
  'db/list',
  'db/migrations',
  'db/outbox',
  'db/read-model-rows',
  'db/state-pages',
  'events/consumer',
  'events/progress',
  'maintenance',
  'sessions/redis-api-session-store',
  'service-host',
  'service-main',
  'service-runtime',
  'http-drain',
];

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/data/**', '**/generated/**', 'deploy/helm/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'warn',
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    // Floor (issue 23, ADR 0020): domain code is free of I/O. Roles are named by file suffix
    // (`<name>.domain.ts`, `<name>.ports.ts`; see the layout rule in test/unit/layout.test.ts).
    // Domain code imports contracts, its own ports and pure helpers only: not the platform barrel
    // (it drags NATS, pg and ioredis into the domain's module graph), not a driver or a server, not
    // the platform modules that run I/O (each listed: it, or a platform module it imports, imports
    // nats, pg, ioredis, drizzle-orm, PGlite or node:net/http; db/migrations reads files and runs
    // SQL), and not its service's stores, adapters, transports or composition root. Pure platform
    // modules come by subpath: `@ziti/platform/ids`, `/event-sink`, `/list-page`, `/db/row-lock`,
    // `/sessions/api-session-store`, `/secret-box`…
    files: ['services/*/src/**/*.domain.ts', 'services/*/src/**/*.ports.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@ziti/platform',
              message: 'Domain code imports the pure platform module that defines the name (@ziti/platform/<module>).',
            },
            ...impurePlatformModules.map((module) => ({
              name: `@ziti/platform/${module}`,
              message: 'This platform module runs I/O: domain code is free of it (a port, implemented in the store).',
            })),
          ],
          patterns: [
            {
              regex: '^(nats|ioredis|pg|drizzle-orm|@electric-sql/pglite|express)(/.*)?$',
              message: 'Domain code is free of I/O: drivers and servers belong to stores, transports and app.ts.',
            },
            {
              regex: '^(node:)?(net|http|https|tls)$',
              message: 'Domain code is free of I/O: drivers and servers belong to stores, transports and app.ts.',
            },
            {
              regex: '^\\.\\.?/(.*/)?[^/]+\\.(store|transport|mapper|adapter|wiring)(\\.ts)?$',
              message: 'Domain code depends on its ports (*.ports.ts), not on stores, adapters, transports or wirings.',
            },
            {
              regex: '^\\.\\.?/(.*/)?(app|main)(\\.ts)?$',
              message: 'Domain code does not import the composition root.',
            },
          ],
        },
      ],
    },
  },
  {
    // Floor (issue 23, ADR 0020): transports do not read stores. A bus handler, event consumer or
    // HTTP route (`*.transport.ts`, and its `*.mapper.ts`) calls a domain service; the store behind
    // the domain's port is wired in src/app.ts. So no store code (`*.store.ts`; adapters are not
    // stores: hashers, signers, TOTP, schema validation), no SQL driver, and no SQL run through the
    // platform (queryRows, listRows).
    files: ['services/*/src/**/*.transport.ts', 'services/*/src/**/*.mapper.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            { name: '@ziti/platform', importNames: ['queryRows', 'listRows'] },
            { name: '@ziti/platform/db/database', importNames: ['queryRows'] },
            { name: '@ziti/platform/db/list', importNames: ['listRows'] },
          ].map((path) => ({
            ...path,
            message: 'Transports do not run SQL: put the read behind a domain service and its port.',
          })),
          patterns: [
            {
              regex: '^\\.\\.?/(.*/)?[^/]+\\.(store|wiring)(\\.ts)?$',
              message: 'Transports do not read stores: call a domain service (its store is wired in app.ts).',
            },
            {
              regex: '^(pg|drizzle-orm|@electric-sql/pglite)(/.*)?$',
              message: 'Transports do not read stores: SQL drivers belong to stores.',
            },
          ],
        },
      ],
    },
  },
  { plugins: { floors } },
  {
    // Floor (issue 33): no service imports another service's files, by package or by path, in its
    // code or its tests. Services meet over the bus (the contracts); what two of them need is a
    // package; a fixture two services' tests share lives in test/support/.
    files: ['services/**/*.{ts,js,mjs}'],
    rules: { 'floors/service-boundary': 'error' },
  },
  {
    // Floor (issue 33): apps import a service only through its entry points, the subpaths its
    // package.json `exports` names (`.`, `./app`, `./config`, and the few modules an app picks
    // itself: fabric's in-process circuit store, the sealed tables `rotate-secret-key` re-seals).
    files: ['apps/**/*.{ts,js,mjs}'],
    rules: { 'floors/app-entry-points': 'error' },
  },
  {
    // Floor (issue 33): a store never builds another resource's store. A `*.store.ts` imports no
    // `*.store.ts` of another resource folder (`shared/` excepted): app.ts builds the stores.
    files: ['services/*/src/**/*.store.ts'],
    rules: {
      'floors/store-ownership': [
        'error',
        {
          // What a store may take from another resource's store module: SQL pieces (column lists,
          // row decoders, query entities), which build no store. A store that reads another
          // resource's rows in its own statement (a login's authenticator with its identity and auth
          // policy, a relation list of posture checks) decodes them as their owner does.
          sqlPieces: {
            'services/auth/src/identities/identities.store.ts': ['identityColumns', 'identityFromRow'],
            'services/auth/src/auth-policies/auth-policies.store.ts': ['authPolicyColumns', 'policyFromRow'],
            'services/policy/src/posture/posture-checks.store.ts': ['postureCheckFromRow', 'postureCheckQuery'],
            // Only the query entities and SQL fragments of policy's derived tables, which every
            // reader of them shares: no store.
            'services/policy/src/read-models/read-model-queries.store.ts': '*',
            // The description of the derived link tables (docs/adr/0009): names and columns, no store.
            'services/policy/src/access/link-tables.store.ts': '*',
            // A policy kind's table definition (columns, roles, query entity) and the one page read of
            // a policy table, which the relation lists read policies with.
            'services/policy/src/policies/service-policies.store.ts': ['servicePolicyTable'],
            'services/policy/src/policies/edge-router-policies.store.ts': ['edgeRouterPolicyTable'],
            'services/policy/src/policies/service-edge-router-policies.store.ts': ['serviceEdgeRouterPolicyTable'],
            'services/policy/src/policies/policies.store.ts': ['listPolicies'],
          },
        },
      ],
    },
  },
);
