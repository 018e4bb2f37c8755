// The import floors that `no-restricted-imports` cannot express (issue 33, ADR 0020): each resolves
// an import against the file that makes it, so it knows which service, resource folder or entry
// point the import reaches, whatever the number of `../` it takes. eslint.config.js applies them
// and names their exceptions; test/unit/layout.test.ts checks each on probe files.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const services = readdirSync(join(root, 'services')).filter((d) => statSync(join(root, 'services', d)).isDirectory());
const servicePackage = new RegExp(`^@ziti/(${services.join('|')})(?:/(.*))?$`);

/** Each service's entry points: the subpaths its package.json `exports` names (`.`, `./app`, …). */
const entryPoints = new Map(
  services.map((service) => {
    const { exports } = JSON.parse(readFileSync(join(root, 'services', service, 'package.json'), 'utf8'));
    return [service, new Set(typeof exports === 'string' ? ['.'] : Object.keys(exports ?? {}))];
  }),
);

/** Where a path lies in the tree: its top folder, and under services/ its service and resource folder. */
function place(path) {
  const parts = relative(root, path).split(sep);
  const inService = parts[0] === 'services' && parts.length > 2;
  return {
    path: parts.join('/'),
    top: parts[0],
    service: inService ? parts[1] : undefined,
    // The resource folder of a file in services/<svc>/src/<folder>/… (undefined at the root of src).
    folder: inService && parts[2] === 'src' && parts.length > 4 ? parts[3] : undefined,
  };
}

/** The names a statement takes from its module; `*` for a namespace, a re-export of all or a bare import. */
function importedNames(node) {
  if (node.type === 'ImportExpression' || node.type === 'ExportAllDeclaration') return ['*'];
  if (node.type === 'ExportNamedDeclaration') return node.specifiers.map((s) => s.local.name ?? s.local.value);
  if (node.specifiers.length === 0) return ['*'];
  return node.specifiers.map((s) =>
    s.type === 'ImportSpecifier'
      ? (s.imported.name ?? s.imported.value)
      : s.type === 'ImportDefaultSpecifier'
        ? 'default'
        : '*',
  );
}

/** Calls `check(node, specifier, names)` for every import, re-export and literal `import()` of a file. */
function eachImport(check) {
  const visit = (node) => {
    if (node.source?.type === 'Literal' && typeof node.source.value === 'string')
      check(node, node.source.value, importedNames(node));
  };
  return {
    ImportDeclaration: visit,
    ExportNamedDeclaration: visit,
    ExportAllDeclaration: visit,
    ImportExpression: visit,
  };
}

const resolved = (context, specifier) =>
  specifier.startsWith('.') ? place(resolve(dirname(context.filename), specifier)) : undefined;

/** services/a/** imports nothing of services/b/**: neither its package (`@ziti/b…`) nor its files by path. */
const serviceBoundary = {
  meta: {
    type: 'problem',
    schema: [],
    messages: {
      crossing:
        "{{service}} imports {{other}}'s files ({{specifier}}): a service does not import another service's files " +
        '(it calls that service over the bus with @ziti/contracts; code both need goes to packages/, test fixtures to test/support/).',
    },
  },
  create(context) {
    const file = place(context.filename);
    if (file.service === undefined) return {};
    return eachImport((node, specifier) => {
      const other = resolved(context, specifier)?.service ?? specifier.match(servicePackage)?.[1];
      if (other !== undefined && other !== file.service)
        context.report({ node, messageId: 'crossing', data: { service: file.service, other, specifier } });
    });
  },
};

/** An app imports a service by its package, and only a subpath its package.json `exports` names. */
const appEntryPoints = {
  meta: {
    type: 'problem',
    schema: [],
    messages: {
      internal:
        '{{specifier}} is not one of the entry points of services/{{service}} ({{entries}}): apps import a service only ' +
        "through its entry points (its package.json `exports`); what an app needs is exported by the service's app.ts.",
      byPath:
        '{{specifier}} reaches into services/ by path: apps import a service only through its entry points ' +
        '(@ziti/<service>, as its package.json `exports` names them).',
    },
  },
  create(context) {
    return eachImport((node, specifier) => {
      if (resolved(context, specifier)?.top === 'services') {
        context.report({ node, messageId: 'byPath', data: { specifier } });
        return;
      }
      const match = specifier.match(servicePackage);
      if (!match) return;
      const [, service, subpath] = match;
      const entries = entryPoints.get(service);
      if (!entries.has(subpath === undefined ? '.' : `./${subpath}`))
        context.report({
          node,
          messageId: 'internal',
          data: { specifier, service, entries: [...entries].join(', ') },
        });
    });
  },
};

/**
 * A store (`*.store.ts`) does not import another resource folder's store module (`shared/` excepted):
 * the composition root builds the stores, and a store that needs another's reads gets them there.
 * Options: `sqlPieces` (module → the names other stores may take from it: column lists, row
 * decoders, query entities, which build no store; `*` for a module that holds nothing else). There
 * are no other exceptions.
 */
const storeOwnership = {
  meta: {
    type: 'problem',
    schema: [
      {
        type: 'object',
        properties: { sqlPieces: { type: 'object' } },
        additionalProperties: false,
      },
    ],
    messages: {
      foreign:
        "{{store}} imports {{names}} from {{target}}: a store does not build another resource's store (the " +
        'composition root, app.ts, wires what it needs; what several stores share goes to shared/).',
    },
  },
  create(context) {
    const { sqlPieces = {} } = context.options[0] ?? {};
    const file = place(context.filename);
    return eachImport((node, specifier, names) => {
      const target = resolved(context, specifier);
      if (!target || target.service !== file.service || target.folder === undefined) return;
      if (!/\.store(\.ts)?$/.test(target.path) || target.folder === file.folder || target.folder === 'shared') return;
      const targetPath = target.path.endsWith('.ts') ? target.path : `${target.path}.ts`;
      const pieces = sqlPieces[targetPath];
      if (pieces === '*' || (Array.isArray(pieces) && names.every((n) => pieces.includes(n)))) return;
      context.report({
        node,
        messageId: 'foreign',
        data: { store: file.path, names: names.join(', '), target: targetPath },
      });
    });
  },
};

export const floors = {
  rules: {
    'service-boundary': serviceBoundary,
    'app-entry-points': appEntryPoints,
    'store-ownership': storeOwnership,
  },
};
