import { z } from 'zod';
import { apiErrorEnvelope, discriminators, meta } from './generated/schemas.ts';
import { type ApiName, apiBasePath, type OperationDef } from './operation.ts';
import { operations } from './table.ts';

/**
 * The Swagger 2.0 document served at `/specs/{id}/spec`, built from the operation table (paths,
 * operations, parameters) and its zod schemas (definitions, through `z.toJSONSchema`), so it
 * describes what this controller validates and answers rather than repeating the official file.
 */

export type JsonSchema = { [key: string]: unknown };

export interface SwaggerParameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'body';
  required: boolean;
  description?: string;
  type?: string;
  format?: string;
  enum?: unknown[];
  items?: JsonSchema;
  collectionFormat?: 'multi';
  minimum?: number;
  maximum?: number;
  schema?: JsonSchema;
}

export interface SwaggerOperation {
  operationId: string;
  tags: string[];
  security: Record<string, string[]>[];
  consumes?: string[];
  produces?: string[];
  parameters?: SwaggerParameter[];
  responses: Record<string, { description: string; schema?: JsonSchema }>;
}

export interface SwaggerDocument {
  swagger: '2.0';
  info: { title: string; description: string; version: string; contact: JsonSchema; license: JsonSchema };
  host: string;
  basePath: string;
  schemes: string[];
  consumes: string[];
  produces: string[];
  tags: { name: string }[];
  paths: Record<string, Record<string, SwaggerOperation>>;
  definitions: Record<string, JsonSchema>;
  securityDefinitions: Record<string, JsonSchema>;
}

export interface SwaggerOptions {
  /** `host[:port]` clients reach this controller at. */
  host: string;
  /** Defaults to the API's base path (`/edge/client/v1`, `/edge/management/v1`). */
  basePath?: string;
}

/** The spec version this controller implements (ZITI-FACTS: API 0.26.25). */
export const specVersion = '0.26.25';

const titles: Record<ApiName, { title: string; description: string }> = {
  client: { title: 'Ziti Edge Client', description: 'OpenZiti Edge Client API' },
  management: { title: 'Ziti Edge Management', description: 'OpenZiti Edge Management API' },
};

const defaultMediaTypes = ['application/json'];
const ref = (name: string) => ({ $ref: `#/definitions/${name}` });

export function buildSwaggerDocument(api: ApiName, options: SwaggerOptions): SwaggerDocument {
  const { paths, definitions, tags } = structuredClone(converted(api));
  return {
    swagger: '2.0',
    info: {
      ...titles[api],
      version: specVersion,
      contact: { name: 'OpenZiti', url: 'https://openziti.discourse.group', email: 'help@openziti.org' },
      license: { name: 'Apache 2.0', url: 'https://www.apache.org/licenses/LICENSE-2.0.html' },
    },
    host: options.host,
    basePath: options.basePath ?? apiBasePath[api],
    schemes: ['https'],
    consumes: defaultMediaTypes,
    produces: defaultMediaTypes,
    tags,
    paths,
    definitions,
    securityDefinitions: {
      ztSession: {
        description: 'An API Key that is provided post authentication',
        type: 'apiKey',
        name: 'zt-session',
        in: 'header',
      },
    },
  };
}

interface Converted {
  paths: SwaggerDocument['paths'];
  definitions: Record<string, JsonSchema>;
  tags: { name: string }[];
}

const cache = new Map<ApiName, Converted>();

function converted(api: ApiName): Converted {
  let result = cache.get(api);
  if (!result) {
    result = convert(operations.filter((op) => op.api === api));
    cache.set(api, result);
  }
  return result;
}

type Part = 'params' | 'query' | 'headers' | 'body' | 'response';
const parts: Part[] = ['params', 'query', 'headers', 'body', 'response'];

function convert(ops: OperationDef[]): Converted {
  // One conversion for every schema of the API, so each definition is emitted once and referenced.
  const shape: Record<string, z.ZodType> = {};
  ops.forEach((op, i) => {
    for (const part of parts) {
      const schema = op[part];
      if (schema) shape[`${i}.${part}`] = schema;
    }
  });
  Object.entries(discriminators).forEach(([name, d]) => {
    shape[`base.${name}`] = d.base;
  });
  shape.meta = meta;
  shape.error = apiErrorEnvelope;
  const json = z.toJSONSchema(z.object(shape), {
    target: 'openapi-3.0',
    io: 'input',
    unrepresentable: 'any',
  }) as JsonSchema;
  const converted = resolveAliases(toSwaggerSchema(json) as JsonSchema) as {
    properties: Record<string, JsonSchema>;
    definitions?: Record<string, JsonSchema>;
  };
  const definitions = { ...(converted.definitions ?? {}) };
  applyDiscriminators(definitions);

  const paths: SwaggerDocument['paths'] = {};
  ops.forEach((op, i) => {
    const schemaOf = (part: Part) => converted.properties[`${i}.${part}`];
    const parameters = [
      ...simpleParameters(schemaOf('params'), 'path'),
      ...simpleParameters(schemaOf('query'), 'query'),
      ...simpleParameters(schemaOf('headers'), 'header'),
    ];
    const body = schemaOf('body');
    if (body)
      parameters.push({ name: op.bodyName ?? 'body', in: 'body', required: op.bodyRequired === true, schema: body });

    const data = schemaOf('response');
    let schema: JsonSchema | undefined;
    if (data) {
      schema = op.bareResponse
        ? data
        : { type: 'object', required: ['meta', 'data'], properties: { data, meta: ref('meta') } };
    }
    const operation: SwaggerOperation = {
      operationId: op.operationId,
      tags: op.tags,
      security: op.access === 'none' ? [] : [{ ztSession: [] }],
      ...(sameMedia(op.consumes) ? {} : { consumes: op.consumes }),
      ...(sameMedia(op.produces) ? {} : { produces: op.produces }),
      ...(parameters.length > 0 ? { parameters } : {}),
      responses: {
        [String(op.successStatuses[0] ?? 200)]: { description: 'Success', ...(schema ? { schema } : {}) },
        default: { description: 'An error, in the OpenZiti error envelope', schema: ref('apiErrorEnvelope') },
      },
    };
    paths[op.path] ??= {};
    paths[op.path]![op.method.toLowerCase()] = operation;
  });

  for (const name of ['meta', 'apiErrorEnvelope']) {
    if (!definitions[name]) throw new Error(`the ${name} definition is missing from the converted schemas`);
  }
  const tags = [...new Set(ops.flatMap((op) => op.tags))].sort().map((name) => ({ name }));
  return { paths, definitions: sortKeys(definitions), tags };
}

const sameMedia = (types: string[]) => types.length === 1 && types[0] === defaultMediaTypes[0];

/** Path, query and header parameters from the JSON schema of their zod object. */
function simpleParameters(schema: JsonSchema | undefined, location: 'path' | 'query' | 'header'): SwaggerParameter[] {
  if (!schema) return [];
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => {
    const parameter: SwaggerParameter = { name, in: location, required: location === 'path' || required.has(name) };
    for (const k of ['description', 'type', 'format', 'enum', 'items', 'minimum', 'maximum'] as const) {
      if (property[k] !== undefined) Object.assign(parameter, { [k]: property[k] });
    }
    parameter.type ??= 'string';
    if (parameter.type === 'array') parameter.collectionFormat = 'multi';
    return parameter;
  });
}

/**
 * zod extracts the `z.lazy` that breaks a recursion as an anonymous definition holding only a `$ref`
 * (`__schema0` → `apiErrorCause`): point its references at the target and drop it.
 */
function resolveAliases(json: JsonSchema): JsonSchema {
  const definitions = (json.definitions ?? {}) as Record<string, JsonSchema>;
  const aliases = new Map<string, string>();
  for (const [name, schema] of Object.entries(definitions)) {
    if (Object.keys(schema).length === 1 && typeof schema.$ref === 'string') {
      aliases.set(`#/definitions/${name}`, schema.$ref);
    }
  }
  if (aliases.size === 0) return json;
  const target = (ref: string): string => {
    let current = ref;
    for (let hops = 0; aliases.has(current) && hops < 16; hops++) current = aliases.get(current)!;
    return current;
  };
  const rewrite = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(rewrite);
    if (!value || typeof value !== 'object') return value;
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' ? target(v) : rewrite(v)]),
    );
  };
  const out = rewrite(json) as JsonSchema;
  const kept = (out.definitions ?? {}) as Record<string, JsonSchema>;
  for (const alias of aliases.keys()) delete kept[alias.slice('#/definitions/'.length)];
  return out;
}

const safeInteger = Number.MAX_SAFE_INTEGER;

/**
 * Rewrites an OpenAPI 3.0 schema object as a Swagger 2.0 one: `nullable` becomes `x-nullable`, the
 * safe-integer bounds zod adds to every integer go, and `allOf: [$ref]` alone becomes the `$ref`.
 */
function toSwaggerSchema(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toSwaggerSchema);
  if (!value || typeof value !== 'object') return value;
  const out: JsonSchema = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === '$schema') continue;
    if (k === 'nullable' && typeof v === 'boolean') {
      if (v) out['x-nullable'] = true;
      continue;
    }
    if ((k === 'minimum' && v === -safeInteger) || (k === 'maximum' && v === safeInteger)) continue;
    out[k] = toSwaggerSchema(v);
  }
  const allOf = out.allOf;
  if (Array.isArray(allOf) && allOf.length === 1 && Object.keys(out).length === 1) return allOf[0];
  return out;
}

/**
 * Swagger 2.0 has no unions: a polymorphic definition is its base type with a `discriminator`, and
 * each subtype is `allOf: [base, own properties]` with its `x-class`, as the official spec writes them.
 */
function applyDiscriminators(definitions: Record<string, JsonSchema>): void {
  for (const [name, d] of Object.entries(discriminators)) {
    const baseId = idOf(d.base);
    const base = definitions[baseId];
    delete definitions[baseId];
    // The bases of every polymorphic definition are converted; keep those this API uses.
    if (!definitions[name] || !base) continue;
    definitions[name] = { ...base, discriminator: d.property };
    const baseProperties = (base.properties ?? {}) as Record<string, unknown>;
    for (const [cls, subtype] of Object.entries(d.subtypes)) {
      const id = idOf(subtype);
      const flat = definitions[id];
      if (!flat) continue;
      const properties = (flat.properties ?? {}) as Record<string, unknown>;
      const own = Object.fromEntries(
        Object.entries(properties).filter(
          ([k, v]) => k !== d.property && JSON.stringify(v) !== JSON.stringify(baseProperties[k]),
        ),
      );
      const ownRequired = ((flat.required ?? []) as string[]).filter((k) => k in own);
      definitions[id] = {
        allOf: [
          ref(name),
          { type: 'object', ...(ownRequired.length > 0 ? { required: ownRequired } : {}), properties: own },
        ],
        'x-class': cls,
      };
    }
  }
  const text = JSON.stringify(definitions);
  for (const d of Object.values(discriminators)) {
    if (text.includes(`"#/definitions/${idOf(d.base)}"`)) throw new Error(`${idOf(d.base)} is referenced`);
  }
}

function idOf(schema: z.ZodType): string {
  const id = z.globalRegistry.get(schema)?.id;
  if (typeof id !== 'string') throw new Error('schema without an id');
  return id;
}

function sortKeys<T>(record: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
