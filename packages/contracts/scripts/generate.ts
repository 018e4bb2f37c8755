/**
 * Generates the operation table and the zod schemas of both official specs (`npm run generate`).
 *
 * Inputs (read-only, beside the repository): `../shared/openapi/{client,management}.yml` (swagger 2.0)
 * and `../shared/operations.tsv` (owner, access and MFA gating of every operation).
 * Outputs (committed): `src/generated/schemas.ts` (one schema per definition that a body or a response uses,
 * shared by both APIs because every definition they have in common is identical) and
 * `src/generated/operations.ts` (one row per api, method and path).
 *
 * The translation follows how go-swagger reads the spec, since that is what the reference controller
 * validates with: objects strip unknown properties, a property not listed in `required` is optional,
 * `x-nullable` admits null, `allOf` merges objects, a `discriminator` selects the subtype whose
 * `x-class` matches, and a `type: object` without properties is Go's `interface{}` (any JSON value).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { parse } from 'yaml';
import { readsRawBody } from '../src/validation.ts';
import { accessCorrections, ownerCorrections } from './corrections.ts';

type ApiName = 'client' | 'management';
const apis: ApiName[] = ['client', 'management'];
const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
type Method = (typeof methods)[number];

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- swagger documents are untyped YAML
type Schema = Record<string, any>;

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'body' | 'formData';
  required?: boolean;
  type?: string;
  format?: string;
  enum?: string[];
  items?: Schema;
  collectionFormat?: string;
  minimum?: number;
  maximum?: number;
  description?: string;
  schema?: Schema;
}

interface SpecOperation {
  operationId?: string;
  tags?: string[];
  parameters?: Parameter[];
  consumes?: string[];
  produces?: string[];
  responses: Record<string, { schema?: Schema }>;
}

interface SpecDocument {
  consumes: string[];
  produces: string[];
  paths: Record<string, Record<string, SpecOperation | Parameter[]>>;
  definitions: Record<string, Schema>;
}

const sharedDir = new URL('../../../../shared/', import.meta.url);
const generatedDir = new URL('../src/generated/', import.meta.url);
/** This controller's extensions to the management API (`openapi/management-extensions.yml`, `extensions.tsv`). */
const extensionsDir = new URL('../openapi/', import.meta.url);

/** Required entries the 0.26.25 spec lists without defining them (ZITI-FACTS §16); the reference never sends them. */
const undefinedRequired: Record<string, string[]> = {
  apiSessionDetail: ['cachedUpdatedAt'],
  edgeRouterDetail: ['os', 'version', 'arch', 'buildDate', 'revision'],
  enrollmentDetail: ['details'],
  postureResponseProcessCreate: ['process'],
};

/** The two logout operations have no operationId in the spec. */
const logoutOperationId = 'deleteCurrentApiSession';

function load(): { docs: Record<ApiName, SpecDocument>; tsv: string[][] } {
  const docs = {} as Record<ApiName, SpecDocument>;
  for (const api of apis) {
    docs[api] = parse(readFileSync(new URL(`openapi/${api}.yml`, sharedDir), 'utf8')) as SpecDocument;
  }
  const rowsOf = (text: string) =>
    text
      .split('\n')
      .filter((line) => line.trim() !== '')
      .slice(1)
      .map((line) => line.split('\t'));
  const tsv = rowsOf(readFileSync(new URL('operations.tsv', sharedDir), 'utf8'));
  // This controller's extensions (under /extensions/ only), with their owners in a table of their own.
  const extensions = parse(readFileSync(new URL('management-extensions.yml', extensionsDir), 'utf8')) as Pick<
    SpecDocument,
    'paths' | 'definitions'
  >;
  for (const path of Object.keys(extensions.paths)) {
    if (!path.startsWith('/extensions/') || docs.management.paths[path]) throw new Error(`extension path ${path}`);
  }
  for (const name of Object.keys(extensions.definitions)) {
    if (docs.management.definitions[name] || docs.client.definitions[name])
      throw new Error(`extension definition ${name}`);
  }
  Object.assign(docs.management.paths, extensions.paths);
  Object.assign(docs.management.definitions, extensions.definitions);
  tsv.push(...rowsOf(readFileSync(new URL('extensions.tsv', extensionsDir), 'utf8')));
  return { docs, tsv };
}

const refName = (ref: string): string => {
  const prefix = '#/definitions/';
  if (!ref.startsWith(prefix)) throw new Error(`unsupported $ref ${ref}`);
  return ref.slice(prefix.length);
};

/** Every definition of both specs; a name both specs define must be defined identically. */
function mergeDefinitions(docs: Record<ApiName, SpecDocument>): Record<string, Schema> {
  const merged: Record<string, Schema> = {};
  for (const api of apis) {
    for (const [name, schema] of Object.entries(docs[api].definitions)) {
      const existing = merged[name];
      if (existing && !isDeepStrictEqual(existing, schema)) {
        throw new Error(`definition ${name} differs between the client and management specs`);
      }
      merged[name] = schema;
    }
  }
  return merged;
}

// ---------------------------------------------------------------------------------------------
// Operations as the specs declare them

interface Operation {
  api: ApiName;
  method: Method;
  path: string;
  operationId: string;
  tags: string[];
  parameters: Parameter[];
  consumes: string[];
  produces: string[];
  successStatuses: number[];
  successSchema?: Schema;
  /** The schemas of the other responses (the error envelope). */
  errorSchemas: Schema[];
}

function collectOperations(docs: Record<ApiName, SpecDocument>): Operation[] {
  const out: Operation[] = [];
  for (const api of apis) {
    const doc = docs[api];
    for (const [path, item] of Object.entries(doc.paths)) {
      const shared = (item.parameters ?? []) as Parameter[];
      for (const [key, value] of Object.entries(item)) {
        if (key === 'parameters') continue;
        const method = key.toUpperCase() as Method;
        if (!methods.includes(method)) throw new Error(`unsupported method ${key} ${path}`);
        const op = value as SpecOperation;
        // Operation-level parameters override path-level ones of the same name and location.
        const own = op.parameters ?? [];
        const parameters = [...shared.filter((p) => !own.some((o) => o.name === p.name && o.in === p.in)), ...own];
        const successes = Object.keys(op.responses)
          .filter((code) => /^2\d\d$/.test(code))
          .map(Number)
          .sort((a, b) => a - b);
        if (successes.length === 0) throw new Error(`no success response for ${api} ${method} ${path}`);
        const successSchema = op.responses[String(successes[0])]?.schema;
        out.push({
          api,
          method,
          path,
          operationId: op.operationId ?? logoutOperationId,
          tags: op.tags ?? [],
          parameters,
          consumes: op.consumes ?? doc.consumes,
          produces: op.produces ?? doc.produces,
          successStatuses: successes,
          ...(successSchema ? { successSchema } : {}),
          errorSchemas: Object.entries(op.responses)
            .filter(([code]) => !/^2\d\d$/.test(code))
            .flatMap(([, response]) => (response.schema ? [response.schema] : [])),
        });
      }
    }
  }
  return out.sort(
    (a, b) =>
      a.api.localeCompare(b.api) ||
      (a.path < b.path ? -1 : a.path > b.path ? 1 : 0) ||
      methods.indexOf(a.method) - methods.indexOf(b.method),
  );
}

// ---------------------------------------------------------------------------------------------
// Which definitions to emit, and in which order

interface Discriminated {
  property: string;
  /** x-class → subtype definition name, sorted by x-class. */
  subtypes: [string, string][];
}

function findDiscriminated(defs: Record<string, Schema>): Map<string, Discriminated> {
  const found = new Map<string, Discriminated>();
  for (const [name, schema] of Object.entries(defs)) {
    if (typeof schema.discriminator === 'string') found.set(name, { property: schema.discriminator, subtypes: [] });
  }
  for (const [name, schema] of Object.entries(defs)) {
    const cls = schema['x-class'];
    if (typeof cls !== 'string') continue;
    for (const part of schema.allOf ?? []) {
      const base = part.$ref ? found.get(refName(part.$ref)) : undefined;
      if (base) base.subtypes.push([cls, name]);
    }
  }
  for (const [name, d] of found) {
    d.subtypes.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const classes = d.subtypes.map(([cls]) => cls);
    if (new Set(classes).size !== classes.length) throw new Error(`duplicate x-class under ${name}`);
  }
  return found;
}

function refsOf(schema: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) for (const item of schema) refsOf(item, into);
  else if (schema && typeof schema === 'object') {
    for (const [key, value] of Object.entries(schema)) {
      if (key === '$ref' && typeof value === 'string') into.add(refName(value));
      else if (key !== 'example' && key !== 'examples') refsOf(value, into);
    }
  }
  return into;
}

function closure(roots: Iterable<string>, defs: Record<string, Schema>, disc: Map<string, Discriminated>): Set<string> {
  const seen = new Set<string>();
  const stack = [...roots];
  while (stack.length > 0) {
    const name = stack.pop()!;
    if (seen.has(name)) continue;
    if (!defs[name]) throw new Error(`unknown definition ${name}`);
    seen.add(name);
    stack.push(...refsOf(defs[name]));
    for (const [, sub] of disc.get(name)?.subtypes ?? []) stack.push(sub);
  }
  return seen;
}

/**
 * The order to emit definitions in: every definition after the ones it uses. A discriminated
 * definition `D` is the union of its subtypes, and each subtype spreads `DBase`, the object of
 * D's own properties. Spreads (`...x.shape`) and union options must exist when used ("hard" edges);
 * any other reference may go through `z.lazy` ("soft" edges), which is how recursion is broken:
 * within a cycle, a definition referenced before it is emitted is marked recursive.
 */
function emitOrder(names: Set<string>, defs: Record<string, Schema>, disc: Map<string, Discriminated>) {
  const parentOf = new Map<string, string>();
  for (const [base, d] of disc) for (const [, sub] of d.subtypes) parentOf.set(sub, base);
  const baseOf = (node: string) =>
    node.endsWith('Base') && disc.has(node.slice(0, -4)) ? node.slice(0, -4) : undefined;

  const edges = (node: string): { hard: string[]; soft: string[] } => {
    const base = baseOf(node);
    if (base) return { hard: [], soft: [...refsOf(defs[base])].sort() };
    const d = disc.get(node);
    if (d) return { hard: d.subtypes.map(([, sub]) => sub).sort(), soft: [] };
    const schema = defs[node]!;
    const parts: Schema[] | undefined = schema.allOf;
    if (!parts || (parts.length === 1 && parts[0]?.$ref && !parentOf.has(node))) {
      return { hard: [], soft: [...refsOf(schema)].sort() };
    }
    const spread = parts.filter((p) => p.$ref).map((p) => refName(p.$ref));
    const hard = spread.map((name) => (disc.has(name) ? `${name}Base` : name));
    const soft = [...refsOf(parts.filter((p) => !p.$ref))].filter((r) => !hard.includes(r));
    return { hard: [...new Set(hard)].sort(), soft: [...new Set(soft)].sort() };
  };
  const depsOf = (node: string) => {
    const { hard, soft } = edges(node);
    return [...new Set([...hard, ...soft])].sort();
  };

  // Tarjan's algorithm yields strongly connected components dependencies-first.
  const components: string[][] = [];
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const strongConnect = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const dep of depsOf(node)) {
      if (!index.has(dep)) {
        strongConnect(dep);
        low.set(node, Math.min(low.get(node)!, low.get(dep)!));
      } else if (onStack.has(dep)) {
        low.set(node, Math.min(low.get(node)!, index.get(dep)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      components.push(component);
    }
  };
  for (const name of [...names].sort()) if (!index.has(name)) strongConnect(name);

  const order: string[] = [];
  const recursive = new Set<string>();
  for (const component of components) {
    const members = new Set(component);
    // Inside a component, only hard edges decide the order; they must not form a cycle.
    const placed = new Set<string>();
    const visiting = new Set<string>();
    const place = (node: string) => {
      if (placed.has(node)) return;
      if (visiting.has(node)) throw new Error(`definitions extend each other in a cycle: ${component.join(', ')}`);
      visiting.add(node);
      for (const dep of edges(node).hard) if (members.has(dep)) place(dep);
      visiting.delete(node);
      placed.add(node);
      order.push(node);
    };
    for (const node of [...component].sort()) place(node);
    for (const node of component) {
      for (const dep of edges(node).soft) {
        if (members.has(dep) && order.indexOf(dep) >= order.indexOf(node)) recursive.add(dep);
      }
    }
  }
  return { order, recursive };
}

// ---------------------------------------------------------------------------------------------
// Schema → zod source

const identifier = /^[A-Za-z_$][\w$]*$/;
const str = (value: string) => `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
const key = (name: string) => (identifier.test(name) ? name : str(name));
const typeName = (name: string) => name.charAt(0).toUpperCase() + name.slice(1);

class Emitter {
  /** Names already emitted; a reference to anything else goes through z.lazy. */
  readonly emitted = new Set<string>();

  constructor(
    private readonly defs: Record<string, Schema>,
    private readonly disc: Map<string, Discriminated>,
    private readonly prefix = '',
    private readonly recursive = new Set<string>(),
  ) {}

  ref(name: string): string {
    const id = `${this.prefix}${name}`;
    return this.emitted.has(name) || this.prefix ? id : `z.lazy(() => ${id})`;
  }

  /** A zod expression for `schema`; `indent` is the indentation of the line the expression starts on. */
  schema(schema: Schema, indent: string): string {
    let out: string;
    if (schema.$ref) out = this.ref(refName(schema.$ref));
    else if (schema.allOf) out = this.allOf(schema, indent);
    else out = this.plain(schema, indent);
    if (schema['x-nullable'] === true) out += '.nullable()';
    return out;
  }

  private plain(schema: Schema, indent: string): string {
    if (Array.isArray(schema.enum)) {
      if (schema.type && schema.type !== 'string') throw new Error(`non-string enum ${JSON.stringify(schema)}`);
      return `z.enum([${schema.enum.map((v: unknown) => str(String(v))).join(', ')}])`;
    }
    const type = schema.type ?? (schema.properties || schema.additionalProperties ? 'object' : undefined);
    switch (type) {
      case 'string': {
        let out = 'z.string()';
        if (schema.minLength !== undefined) out += `.min(${schema.minLength})`;
        if (schema.maxLength !== undefined) out += `.max(${schema.maxLength})`;
        if (schema.pattern !== undefined) out += `.regex(new RegExp(${str(schema.pattern)}))`;
        if (schema.format) out += `.meta({ format: ${str(schema.format)} })`;
        return out;
      }
      case 'integer':
      case 'number': {
        let out = type === 'integer' ? 'z.int()' : 'z.number()';
        if (schema.minimum !== undefined)
          out += schema.exclusiveMinimum ? `.gt(${schema.minimum})` : `.min(${schema.minimum})`;
        if (schema.maximum !== undefined)
          out += schema.exclusiveMaximum ? `.lt(${schema.maximum})` : `.max(${schema.maximum})`;
        if (schema.format) out += `.meta({ format: ${str(schema.format)} })`;
        return out;
      }
      case 'boolean':
        return 'z.boolean()';
      case 'array': {
        let out = `z.array(${schema.items ? this.schema(schema.items, indent) : 'z.unknown()'})`;
        if (schema.minItems !== undefined) out += `.min(${schema.minItems})`;
        if (schema.maxItems !== undefined) out += `.max(${schema.maxItems})`;
        return out;
      }
      case 'object': {
        if (schema.properties) {
          if (schema.additionalProperties)
            throw new Error(`properties with additionalProperties: ${JSON.stringify(schema)}`);
          return this.object(schema.properties, schema.required ?? [], indent);
        }
        if (schema.additionalProperties === true) return 'z.record(z.string(), z.unknown())';
        if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
          return `z.record(z.string(), ${this.schema(schema.additionalProperties, indent)})`;
        }
        // go-swagger reads a bare `type: object` as interface{}: any JSON value.
        return `z.unknown().meta({ type: 'object' })`;
      }
      case undefined:
        return 'z.unknown()';
      default:
        throw new Error(`unsupported type ${type}`);
    }
  }

  private object(
    properties: Record<string, Schema>,
    required: string[],
    indent: string,
    spread: string[] = [],
  ): string {
    const inner = `${indent}  `;
    const lines = spread.map((s) => `${inner}...${s}.shape,`);
    for (const [name, prop] of Object.entries(properties)) {
      lines.push(`${inner}${key(name)}: ${this.property(prop, required.includes(name), inner)},`);
    }
    if (lines.length === 0) return 'z.object({})';
    return `z.object({\n${lines.join('\n')}\n${indent}})`;
  }

  property(schema: Schema, required: boolean, indent: string): string {
    const out = this.schema(schema, indent);
    return required ? out : `${out}.optional()`;
  }

  /** allOf: the parts are objects (references or inline); their properties are merged in order. */
  private allOf(schema: Schema, indent: string, subtypeOf?: { property: string; cls: string }): string {
    const parts: Schema[] = schema.allOf;
    if (parts.length === 1 && parts[0]?.$ref && !subtypeOf) return this.ref(refName(parts[0].$ref));
    const spread: string[] = [];
    const properties: Record<string, Schema> = {};
    const required: string[] = [];
    const known = new Set<string>();
    for (const part of parts) {
      if (part.$ref) {
        const name = refName(part.$ref);
        if (!this.isObject(this.defs[name]!)) throw new Error(`cannot merge ${name} into an allOf`);
        spread.push(this.disc.has(name) ? `${this.prefix}${name}Base` : this.ref(name));
        for (const p of this.propertyNames(this.defs[name]!)) known.add(p);
      } else {
        Object.assign(properties, part.properties ?? {});
        for (const p of Object.keys(part.properties ?? {})) known.add(p);
        required.push(...(part.required ?? []));
      }
    }
    for (const r of required) {
      if (!known.has(r)) continue;
      if (!(r in properties)) throw new Error(`allOf requires ${r} from another part; unsupported`);
    }
    if (subtypeOf) {
      properties[subtypeOf.property] = { enum: [subtypeOf.cls] };
      required.push(subtypeOf.property);
    }
    if (spread.some((s) => s.startsWith('z.lazy('))) throw new Error('allOf over a forward reference is unsupported');
    return this.object(properties, required, indent, spread);
  }

  private isObject(schema: Schema): boolean {
    if (schema.$ref) return this.isObject(this.defs[refName(schema.$ref)]!);
    if (schema.allOf) return schema.allOf.every((part: Schema) => this.isObject(part));
    return Boolean(schema.properties) || (schema.type === 'object' && !schema.additionalProperties);
  }

  private propertyNames(schema: Schema): string[] {
    if (schema.$ref) return this.propertyNames(this.defs[refName(schema.$ref)]!);
    return [
      ...Object.keys(schema.properties ?? {}),
      ...(schema.allOf ?? []).flatMap((p: Schema) => this.propertyNames(p)),
    ];
  }

  /** A definition: `export const name = …`. */
  definition(name: string): string {
    const schema = this.defs[name]!;
    const lines: string[] = [];
    const doc = schema.description ? `/** ${oneLine(schema.description)} */\n` : '';
    const disc = this.disc.get(name);
    const parentOf = [...this.disc].find(([, d]) => d.subtypes.some(([, sub]) => sub === name));
    let body: string;
    if (disc) {
      // The union of the subtypes, chosen by the discriminator (go-swagger's Unmarshal<Name>).
      const options = disc.subtypes.map(([, sub]) => `  ${this.ref(sub)},`).join('\n');
      body = `z.discriminatedUnion(${str(disc.property)}, [\n${options}\n])`;
    } else if (parentOf) {
      const [, d] = parentOf;
      const cls = d.subtypes.find(([, sub]) => sub === name)![0];
      body = this.allOf(schema, '', { property: d.property, cls });
    } else {
      body = this.schema(schema, '');
    }
    const annotation = this.recursive.has(name) ? ': z.ZodType' : '';
    lines.push(`${doc}export const ${name}${annotation} = ${body}.meta({ id: ${str(name)} });`);
    lines.push(`export type ${typeName(name)} = z.infer<typeof ${name}>;`);
    this.emitted.add(name);
    return lines.join('\n');
  }

  /** The object part of a discriminated definition, which its subtypes extend: `export const <name>Base`. */
  base(name: string): string {
    const schema = { ...this.defs[name]! };
    delete schema['x-nullable'];
    const body = this.schema(schema, '');
    this.emitted.add(`${name}Base`);
    return [
      `/** The properties shared by every ${name} subtype (the swagger base type). */`,
      `export const ${name}Base = ${body}.meta({ id: ${str(`${name}Base`)} });`,
    ].join('\n');
  }
}

const oneLine = (text: string) => text.replace(/\*\//g, '*\\/').replace(/\s+/g, ' ').trim();

function stripUndefinedRequired(defs: Record<string, Schema>): Record<string, Schema> {
  const copy: Record<string, Schema> = structuredClone(defs);
  for (const [name, props] of Object.entries(undefinedRequired)) {
    const def = copy[name];
    if (!def) throw new Error(`expected definition ${name}`);
    const parts = def.allOf ? def.allOf.filter((p: Schema) => !p.$ref) : [def];
    for (const prop of props) {
      const part = parts.find((p: Schema) => p.required?.includes(prop));
      if (!part) throw new Error(`expected ${name} to require ${prop}`);
      part.required = part.required.filter((r: string) => r !== prop);
    }
  }
  // Any other required entry without a property would be a new spec defect: fail loudly.
  for (const [name, def] of Object.entries(copy)) {
    const props = new Set<string>();
    const collect = (s: Schema) => {
      if (s.$ref) return collect(copy[refName(s.$ref)]!);
      for (const p of Object.keys(s.properties ?? {})) props.add(p);
      for (const part of s.allOf ?? []) collect(part);
    };
    collect(def);
    const requiredOf = (s: Schema): string[] => [
      ...(s.required ?? []),
      ...(s.allOf ?? []).filter((p: Schema) => !p.$ref).flatMap(requiredOf),
    ];
    for (const r of requiredOf(def)) {
      if (!props.has(r)) throw new Error(`${name} requires undefined ${r}`);
    }
  }
  return copy;
}

// ---------------------------------------------------------------------------------------------
// Output files

const header = (what: string) =>
  [
    '// Code generated by packages/contracts/scripts/generate.ts from ../shared/openapi/*.yml and',
    '// ../shared/operations.tsv; DO NOT EDIT. Regenerate with `npm run generate`.',
    `// ${what}`,
    '',
  ].join('\n');

function renderSchemas(defs: Record<string, Schema>, names: Set<string>, disc: Map<string, Discriminated>): string {
  const { order, recursive } = emitOrder(names, defs, disc);
  // A definition reached again while its own dependencies are emitted is referenced through z.lazy
  // before it exists, and is typed `z.ZodType` so TypeScript need not infer a recursive type.
  const emitter = new Emitter(defs, disc, '', recursive);
  const blocks: string[] = [];
  for (const node of order) {
    const isBase = node.endsWith('Base') && disc.has(node.slice(0, -4));
    blocks.push(isBase ? emitter.base(node.slice(0, -4)) : emitter.definition(node));
  }
  const discEntries = [...disc]
    .filter(([name]) => names.has(name))
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([name, d]) => {
      const subs = d.subtypes.map(([cls, sub]) => `    ${key(cls)}: ${sub},`).join('\n');
      return `  ${name}: {\n    property: ${str(d.property)},\n    base: ${name}Base,\n    subtypes: {\n${subs.replace(/^/gm, '  ')}\n    },\n  },`;
    });
  return [
    header(
      'One zod schema per swagger definition an operation of either API uses (bodies, success and error responses).',
    ),
    "import { z } from 'zod';",
    '',
    blocks.join('\n\n'),
    '',
    '/**',
    ' * The polymorphic definitions: each is the union of its subtypes, chosen by `property`, whose',
    " * value is the subtype's `x-class`; `base` holds the properties they share.",
    ' */',
    'export const discriminators = {',
    ...discEntries,
    '} as const satisfies Record<string, { property: string; base: z.ZodObject; subtypes: Record<string, z.ZodObject> }>;',
    '',
    '/** Every definition above by its swagger name. */',
    'export const definitions = {',
    ...[...names].sort().map((n) => `  ${n},`),
    '} as const;',
    '',
  ].join('\n');
}

interface TsvRow {
  owner: string;
  access: string;
  mfaPendingOk: boolean;
  tag: string;
}

function indexTsv(tsv: string[][], ops: Operation[]): Map<string, TsvRow> {
  const rows = new Map<string, TsvRow>();
  for (const cols of tsv) {
    const [api, method, path, operationId, tag, owner, access, mfa] = cols;
    if (cols.length !== 8 || !api || !method || !path || !operationId || !tag || !owner || !access || !mfa) {
      throw new Error(`malformed operations.tsv row: ${cols.join(' | ')}`);
    }
    const k = `${api} ${method} ${path}`;
    const op = ops.find((o) => `${o.api} ${o.method} ${o.path}` === k);
    if (!op) throw new Error(`operations.tsv names an operation the spec lacks: ${k}`);
    const expectedId = operationId.startsWith('(none') ? logoutOperationId : operationId;
    if (op.operationId !== expectedId) throw new Error(`operationId mismatch for ${k}: ${operationId}`);
    const accessMap: Record<string, string> = { none: 'none', auth: 'authenticated', admin: 'admin' };
    if (!accessMap[access]) throw new Error(`unknown access ${access}`);
    if (mfa !== 'yes' && mfa !== 'no') throw new Error(`unknown mfa_pending_ok ${mfa}`);
    const corrected = accessCorrections[k]?.access ?? accessMap[access]!;
    rows.set(k, { owner: ownerCorrections[k]?.owner ?? owner, access: corrected, mfaPendingOk: mfa === 'yes', tag });
  }
  for (const op of ops) {
    if (!rows.has(`${op.api} ${op.method} ${op.path}`))
      throw new Error(`operations.tsv lacks ${op.api} ${op.method} ${op.path}`);
  }
  return rows;
}

const isJson = (mediaType: string) => {
  const base = mediaType.split(';')[0]!.trim().toLowerCase();
  return base === 'application/json' || base.endsWith('+json');
};

/**
 * The JSON success answer of an operation: the `data` of its envelope, or the body itself
 * (`bare`), as the zod schema the table holds and as its TypeScript type.
 */
function responseOf(
  op: Operation,
  defs: Record<string, Schema>,
): { schema: string; type: string; bare: boolean } | undefined {
  const success = op.successSchema;
  if (!success?.$ref || !op.produces.some(isJson)) return undefined;
  const name = refName(success.$ref);
  const def = defs[name]!;
  if (def.properties?.data && def.properties?.meta) {
    const data = def.properties.data as Schema;
    if (data.$ref) {
      const dataName = refName(data.$ref);
      return { schema: `s.${dataName}`, type: `s.${typeName(dataName)}`, bare: false };
    }
    if (!(def.required ?? []).includes('data')) throw new Error(`inline optional data in ${name}`);
    return { schema: `s.${name}.shape.data`, type: `s.${typeName(name)}['data']`, bare: false };
  }
  return { schema: `s.${name}`, type: `s.${typeName(name)}`, bare: true };
}

function renderOperations(
  ops: Operation[],
  tsv: Map<string, TsvRow>,
  defs: Record<string, Schema>,
  disc: Map<string, Discriminated>,
): string {
  const emitter = new Emitter(defs, disc, 's.');
  const ids = new Set<string>();
  const rows: string[] = [];
  const helpers = new Set<string>();

  for (const op of ops) {
    const idKey = `${op.api}.${op.operationId}`;
    if (ids.has(idKey)) throw new Error(`duplicate operationId ${idKey}`);
    ids.add(idKey);
    const meta = tsv.get(`${op.api} ${op.method} ${op.path}`)!;
    if (meta.tag !== op.tags[0]) throw new Error(`tag mismatch for ${idKey}`);
    const i = '    ';
    const lines: string[] = [
      `api: '${op.api}'`,
      `method: '${op.method}'`,
      `path: ${str(op.path)}`,
      `operationId: ${str(op.operationId)}`,
      `tag: ${str(op.tags[0] ?? '')}`,
      `tags: [${op.tags.map(str).join(', ')}]`,
      `owner: '${meta.owner}'`,
      `access: '${meta.access}'`,
      `mfaPendingOk: ${meta.mfaPendingOk}`,
      `successStatuses: [${op.successStatuses.join(', ')}]`,
      `consumes: [${op.consumes.map(str).join(', ')}]`,
      `produces: [${op.produces.map(str).join(', ')}]`,
    ];

    const pathParams = op.parameters.filter((p) => p.in === 'path');
    const declaredInPath = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
    if (
      pathParams.length !== declaredInPath.length ||
      !declaredInPath.every((n) => pathParams.some((p) => p.name === n))
    ) {
      throw new Error(`path parameters of ${idKey} do not match its path`);
    }
    if (declaredInPath.length > 0) {
      lines.push(`params: z.object({ ${declaredInPath.map((n) => `${key(n)}: z.string()`).join(', ')} })`);
    }

    const queryParams = op.parameters.filter((p) => p.in === 'query');
    if (queryParams.length > 0) {
      const props = queryParams.map((p) => {
        const { pre, inner } = queryParam(p);
        const preName = { value: 'queryValue', integer: 'queryInteger', boolean: 'queryBoolean', array: 'queryArray' }[
          pre
        ];
        helpers.add(preName);
        const optionalInner = p.required || pre === 'array' ? inner : `${inner}.optional()`;
        const outer = `z.preprocess(${preName}, ${optionalInner})`;
        return `${i}  ${key(p.name)}: ${p.required ? outer : `${outer}.optional()`},`;
      });
      // Lists also read an undocumented `sort` (ZITI-FACTS §3.3).
      if (queryParams.some((p) => p.name === 'filter') && !queryParams.some((p) => p.name === 'sort')) {
        helpers.add('sortQueryParam');
        props.push(`${i}  sort: sortQueryParam,`);
      }
      lines.push(`query: z.looseObject({\n${props.join('\n')}\n${i}})`);
    }

    const headerParams = op.parameters.filter((p) => p.in === 'header');
    if (headerParams.length > 0) {
      const props = headerParams.map(
        (p) => `${key(p.name.toLowerCase())}: z.string()${p.required ? '' : '.optional()'}`,
      );
      lines.push(`headers: z.object({ ${props.join(', ')} })`);
    }

    const other = op.parameters.filter((p) => !['path', 'query', 'header', 'body'].includes(p.in));
    if (other.length > 0) throw new Error(`unsupported parameter location in ${idKey}: ${other.map((p) => p.in)}`);

    const bodies = op.parameters.filter((p) => p.in === 'body');
    if (bodies.length > 1) throw new Error(`more than one body parameter in ${idKey}`);
    const body = bodies[0];
    if (body) {
      if (!body.schema) throw new Error(`body without schema in ${idKey}`);
      lines.push(`body: ${emitter.schema(body.schema, i)}`);
      lines.push(`bodyName: ${str(body.name)}`);
      lines.push(`bodyRequired: ${body.required === true}`);
    }

    const response = responseOf(op, defs);
    if (response) {
      lines.push(`response: ${response.schema}`);
      if (response.bare) lines.push('bareResponse: true');
    }
    rows.push(`  {\n${lines.map((l) => `${i}${l},`).join('\n')}\n  },`);
  }

  return [
    header('One row per operation of the Edge Client and Edge Management specs, sorted by api, path and method.'),
    "import { z } from 'zod';",
    "import type { OperationDef } from '../operation.ts';",
    `import { ${[...helpers].sort().join(', ')} } from '../validation.ts';`,
    "import * as s from './schemas.ts';",
    '',
    'export const operations: OperationDef[] = [',
    ...rows,
    '];',
    '',
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------
// Types of each operation's decoded input and answer

/**
 * The TypeScript type of what the Emitter's zod schema for `schema` parses to (`z.infer`), for the
 * few schemas an operation writes inline (query parameters, a body that is not a definition):
 * definitions are referred to by their generated type (`s.<Name>`).
 */
function tsType(schema: Schema): string {
  let out: string;
  if (schema.$ref) out = `s.${typeName(refName(schema.$ref))}`;
  else if (schema.allOf) throw new Error(`inline allOf is unsupported: ${JSON.stringify(schema)}`);
  else if (Array.isArray(schema.enum)) out = schema.enum.map((v: unknown) => str(String(v))).join(' | ');
  else {
    const type = schema.type ?? (schema.properties || schema.additionalProperties ? 'object' : undefined);
    switch (type) {
      case 'string':
        out = 'string';
        break;
      case 'integer':
      case 'number':
        out = 'number';
        break;
      case 'boolean':
        out = 'boolean';
        break;
      case 'array':
        out = `Array<${schema.items ? tsType(schema.items) : 'unknown'}>`;
        break;
      case 'object':
        if (schema.properties) {
          const required: string[] = schema.required ?? [];
          const props = Object.entries(schema.properties as Record<string, Schema>).map(([name, prop]) =>
            required.includes(name) ? `${key(name)}: ${tsType(prop)}` : `${key(name)}?: ${tsType(prop)} | undefined`,
          );
          out = props.length === 0 ? 'Record<string, never>' : `{ ${props.join('; ')} }`;
        } else if (schema.additionalProperties === true) out = 'Record<string, unknown>';
        else if (schema.additionalProperties && typeof schema.additionalProperties === 'object')
          out = `Record<string, ${tsType(schema.additionalProperties)}>`;
        else out = 'unknown';
        break;
      case undefined:
        out = 'unknown';
        break;
      default:
        throw new Error(`unsupported type ${type}`);
    }
  }
  return schema['x-nullable'] === true ? `${out} | null` : out;
}

/** The type of an operation's query as the table's `z.looseObject` parses it; undeclared parameters pass as they came. */
function queryType(op: Operation, indent: string): string {
  const params = op.parameters.filter((p) => p.in === 'query');
  if (params.length === 0) return 'Record<string, unknown>';
  const lines = params.map((p) => {
    const type = tsType(p.type === 'array' ? { type: 'array', items: p.items ?? { type: 'string' } } : p);
    return `${indent}  ${key(p.name)}${p.required ? '' : '?'}: ${type}${p.required ? '' : ' | undefined'};`;
  });
  if (params.some((p) => p.name === 'filter') && !params.some((p) => p.name === 'sort')) {
    lines.push(`${indent}  sort?: string | undefined;`);
  }
  lines.push(`${indent}  [key: string]: unknown;`);
  return `{\n${lines.join('\n')}\n${indent}}`;
}

const ownerTypeName = (owner: string) =>
  `${owner.replace(/(^|-)([a-z])/g, (_, __, c: string) => c.toUpperCase())}OperationKey`;

function renderOperationTypes(ops: Operation[], tsv: Map<string, TsvRow>, defs: Record<string, Schema>): string {
  const entries: string[] = [];
  const byOwner = new Map<string, string[]>();
  for (const op of ops) {
    const opKey = `${op.api}.${op.operationId}`;
    const { owner } = tsv.get(`${op.api} ${op.method} ${op.path}`)!;
    byOwner.set(owner, [...(byOwner.get(owner) ?? []), opKey]);
    const body = op.parameters.find((p) => p.in === 'body');
    const i = '    ';
    const lines = [
      `owner: '${owner}';`,
      `body: ${body ? tsType(body.schema!) : 'undefined'};`,
      `bodyRequired: ${Boolean(body?.required) && !readsRawBody(op)};`,
      `query: ${queryType(op, i)};`,
      `reply: ${responseOf(op, defs)?.type ?? 'undefined'};`,
    ];
    entries.push(`  ${str(opKey)}: {\n${lines.map((l) => `${i}${l}`).join('\n')}\n  };`);
  }
  const owners = [...byOwner.keys()].sort();
  return [
    header("Types of every operation's decoded input and answer, by key `<api>.<operationId>`, and each owner's keys."),
    "import type * as s from './schemas.ts';",
    '',
    '/**',
    " * What an operation's owner receives and answers, as the table's schemas decode it:",
    " * `body` is the body schema's type (`undefined`: the operation declares none) and `bodyRequired`",
    ' * whether every request carries it decoded (a required JSON body that may not come as raw text);',
    ' * `query` the query as validated and coerced (undeclared parameters pass as they came); `reply`',
    ' * the success data (`undefined`: the answer is not JSON).',
    ' */',
    'export interface OperationTypes {',
    ...entries,
    '}',
    '',
    ...owners.flatMap((owner) => [
      `/** The operations ${owner} owns. */`,
      `export type ${ownerTypeName(owner)} =\n${byOwner
        .get(owner)!
        .map((k) => `  | ${str(k)}`)
        .join('\n')};`,
      '',
    ]),
    "/** Every owner's operation keys. */",
    'export interface OperationKeysByOwner {',
    ...owners.map((owner) => `  ${key(owner)}: ${ownerTypeName(owner)};`),
    '}',
    '',
  ].join('\n');
}

/** A query parameter as go-swagger binds it: the last value of a repeated parameter, an empty value as absent. */
function queryParam(p: Parameter): { pre: 'value' | 'integer' | 'boolean' | 'array'; inner: string } {
  const schemaOf = (s: Schema) => new Emitter({}, new Map()).schema(s, '');
  switch (p.type) {
    case 'array':
      if (p.collectionFormat !== 'multi')
        throw new Error(`unsupported collectionFormat ${p.collectionFormat} for ${p.name}`);
      return { pre: 'array', inner: `z.array(${schemaOf(p.items ?? { type: 'string' })})` };
    case 'integer':
      return { pre: 'integer', inner: schemaOf(p) };
    case 'boolean':
      return { pre: 'boolean', inner: 'z.boolean()' };
    case 'string':
      return { pre: 'value', inner: schemaOf(p) };
    default:
      throw new Error(`unsupported query parameter type ${p.type} for ${p.name}`);
  }
}

/** The generated files by name, as `npm run generate` writes them (tests compare them with the committed ones). */
export function renderGeneratedFiles(): { files: Record<string, string>; summary: string } {
  const { docs, tsv } = load();
  const defs = stripUndefinedRequired(mergeDefinitions(docs));
  const disc = findDiscriminated(defs);
  const ops = collectOperations(docs);
  const count = (api: ApiName) => ops.filter((o) => o.api === api).length;

  const roots = new Set<string>();
  for (const op of ops) {
    for (const p of op.parameters) if (p.in === 'body') refsOf(p.schema, roots);
    refsOf(op.successSchema, roots);
    refsOf(op.errorSchemas, roots);
  }
  const names = closure(roots, defs, disc);
  for (const name of names) {
    if (disc.has(name) && names.has(`${name}Base`)) throw new Error(`name clash: ${name}Base is a definition`);
  }
  const tsvRows = indexTsv(tsv, ops);
  return {
    files: {
      'schemas.ts': renderSchemas(defs, names, disc),
      'operations.ts': renderOperations(ops, tsvRows, defs, disc),
      'operation-types.ts': renderOperationTypes(ops, tsvRows, defs),
    },
    summary: `${names.size} schemas and ${ops.length} operations (client ${count('client')}, management ${count('management')})`,
  };
}

function main(): void {
  const { files, summary } = renderGeneratedFiles();
  mkdirSync(generatedDir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(new URL(name, generatedDir), text);
  console.log(`generated ${summary} in ${fileURLToPath(generatedDir)}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
