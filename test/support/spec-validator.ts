/**
 * Response validator for the official OpenZiti Edge swagger 2.0 specs (edge-api v0.26.25).
 *
 * End-to-end tests call `validate()` on every response they receive; it throws unless the
 * status is declared by the operation and the body matches the declared response schema.
 *
 * ```ts
 * import { loadSpecValidator } from '../support/spec-validator.ts';
 * const spec = loadSpecValidator();            // synchronous, cached per spec directory
 * spec.validate('management', 'GET', '/edge/management/v1/identities?limit=5', res.status, json, res.headers.get('content-type') ?? undefined);
 * spec.resolve('client', 'GET', '/current-identity/mfa/qr-code'); // { template, operationId, statuses, ... }
 * ```
 *
 * The specs are read from `<repo>/../shared/openapi/{client,management}.yml` (the `shared` folder is a
 * sibling of the repository root; override with `loadSpecValidator({ specDir })`). The management document
 * gets this controller's extensions merged in (`packages/contracts/openapi/management-extensions.yml`, paths
 * under `/extensions/` only), as the served spec has them.
 *
 * Matching
 * - `url` is absolute (`https://host:1280/edge/client/v1/x`) or a path, with or without the API base
 *   path (`/edge/client/v1/identities/abc?x=1` and `/identities/abc` are the same); query and fragment
 *   are ignored, a trailing slash is ignored, segments are percent-decoded. A path under the *other*
 *   API's base path is an error.
 * - Path templates are matched segment by segment; when several match, the one whose first differing
 *   segment is static wins (`/a/b` beats `/a/{id}`).
 * - The response is `responses[status]`, else `responses.default`; otherwise the status is undeclared.
 *
 * Body check (what is validated once the status is declared)
 * - Skipped when the response declares no schema, the schema is `type: file`, the schema is a raw
 *   `type: string` on an operation that produces a non-JSON media type (PEM, JWT, PKCS#7 payloads), or
 *   the operation produces no JSON media type at all.
 * - If `contentType` is given and is not JSON: fine when the operation produces that media type or the
 *   body is empty (go-openapi answers a non-JSON `Accept` with the status and an empty body, ZITI-FACTS
 *   §2.1); anything else (e.g. an HTML error page) is an error.
 * - Otherwise `body` must be the parsed JSON value (`undefined` = empty body, which fails).
 *
 * Schema preparation (swagger 2.0 → JSON Schema draft-07 for ajv; see `prepareDefinitions`)
 * - All definitions are added to ajv as one document with a `$id`; `#/definitions/X` refs point into it.
 * - `x-nullable: true` also allows `null` (type list + enum, or `anyOf [null, …]` around refs/allOf).
 * - `required` entries naming a property that the definition (including its `allOf` parts and the
 *   enclosing `allOf` composition) never defines are dropped (the 0.26.25 specs list a few, ZITI-FACTS §16).
 * - `additionalProperties` stays as the spec says (absent = allowed; the specs never forbid them).
 * - A bare `type: object` used as a map value (`additionalProperties: {type: object}`) is go-swagger's
 *   `interface{}` and accepts any JSON value (tag values are strings; `serviceDetail.config` holds
 *   arbitrary config data).
 * - Formats: `date-time` is strict RFC 3339 as Go's `time.Parse(time.RFC3339)` reads it (upper-case `T`
 *   and `Z` or ±hh:mm offset, 1–9 fraction digits, real calendar dates, no leap second); `uri`/`url` must
 *   be absolute URIs, except on `href` properties (links are relative, `./identities/x`); `int32`/`int64`
 *   must be integers in range (int64's as far as a double tells: MaxInt64 reads as 2^63); `byte` must be
 *   base64. `uuid` is NOT enforced: the reference controller fills `caDetail.verificationToken` (declared
 *   uuid) with a shortid (ZITI-FACTS §8.3).
 * - Swagger-only / annotation keywords (`x-*`, `example`, `description`, `discriminator`, `readOnly`, …)
 *   are stripped; swagger's boolean `exclusiveMinimum/Maximum` become draft-07 numbers.
 * - `discriminator` (posture checks and posture-check failures): a reference to a base definition
 *   validates the base, requires the discriminator value to be one of the subtypes' `x-class` values
 *   (or subtype names when `x-class` is absent) and then validates the matching subtype's own parts.
 * - Strict otherwise: required properties, JSON types, enums, min/max constraints.
 */
import { readFileSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Ajv, type AnySchemaObject, type ErrorObject, type ValidateFunction } from 'ajv';
import formatsPluginImport, { type FormatsPlugin } from 'ajv-formats';
import { parse as parseYaml } from 'yaml';

export type ApiName = 'client' | 'management';
export const API_NAMES: readonly ApiName[] = ['client', 'management'];

/** The subset of a swagger 2.0 document the validator uses. */
export interface SwaggerDoc {
  basePath?: string;
  produces?: string[];
  paths: Record<string, Record<string, unknown>>;
  definitions?: Record<string, unknown>;
  responses?: Record<string, unknown>;
}

export interface ResolvedOperation {
  api: ApiName;
  method: string;
  /** The spec path template, e.g. `/identities/{id}/authenticators`. */
  template: string;
  /** Path parameters extracted from the concrete path. */
  params: Record<string, string>;
  operationId: string | undefined;
  /** Declared response statuses (including `default` if present). */
  statuses: string[];
  produces: string[];
}

export interface SpecValidator {
  /** Throws a `SpecValidationError` unless the response conforms to the spec. */
  validate(api: ApiName, method: string, url: string, status: number, body: unknown, contentType?: string): void;
  /** Finds the template and operation for a concrete request; throws if there is none. */
  resolve(api: ApiName, method: string, url: string): ResolvedOperation;
}

export class SpecValidationError extends Error {
  override readonly name = 'SpecValidationError';
  constructor(
    message: string,
    readonly details: {
      api: ApiName;
      method: string;
      url: string;
      template?: string;
      status?: number;
      errors?: string[];
    },
  ) {
    super(message);
  }
}

// ---------------------------------------------------------------------------------------------
// Loading

const DEFAULT_SPEC_DIR = new URL('../../../shared/openapi/', import.meta.url);
const cache = new Map<string, SpecValidator>();

/**
 * Loads both specs (synchronously) and returns a validator; cached per spec directory.
 * `specDir` is a directory URL or path holding `client.yml` and `management.yml`.
 */
export function loadSpecValidator(options: { specDir?: URL | string } = {}): SpecValidator {
  const dir = toDirUrl(options.specDir ?? DEFAULT_SPEC_DIR);
  const cached = cache.get(dir.href);
  if (cached) return cached;
  const docs = {} as Record<ApiName, SwaggerDoc>;
  for (const api of API_NAMES) {
    const file = new URL(`${api}.yml`, dir);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new Error(
        `spec-validator: cannot read ${file.pathname} (the shared/ folder must be a sibling of the repository root): ${(err as Error).message}`,
      );
    }
    docs[api] = parseYaml(text) as SwaggerDoc;
  }
  mergeManagementExtensions(docs.management);
  const validator = createSpecValidator(docs);
  cache.set(dir.href, validator);
  return validator;
}

/** This controller's extensions to the management API (issue 24), as `npm run generate` merges them. */
const EXTENSIONS_FILE = new URL('../../packages/contracts/openapi/management-extensions.yml', import.meta.url);

/**
 * Merges the extensions (paths under `/extensions/`, their definitions) into the management document,
 * as the served `/specs/management/spec` has them, so their responses are validated like the others.
 * An extension that would replace an official path or definition is an error.
 */
function mergeManagementExtensions(doc: SwaggerDoc): void {
  const extensions = parseYaml(readFileSync(EXTENSIONS_FILE, 'utf8')) as Pick<SwaggerDoc, 'paths' | 'definitions'>;
  for (const path of Object.keys(extensions.paths ?? {}))
    if (!path.startsWith('/extensions/') || doc.paths[path])
      throw new Error(`spec-validator: extension path ${path} is outside /extensions/ or already in the spec`);
  doc.definitions ??= {};
  for (const name of Object.keys(extensions.definitions ?? {}))
    if (doc.definitions[name]) throw new Error(`spec-validator: extension definition ${name} is already in the spec`);
  Object.assign(doc.paths, extensions.paths);
  Object.assign(doc.definitions, extensions.definitions);
}

function toDirUrl(dir: URL | string): URL {
  const url = dir instanceof URL ? new URL(dir.href) : pathToFileURL(resolvePath(dir));
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return url;
}

// ---------------------------------------------------------------------------------------------
// Validator

interface CompiledTemplate {
  template: string;
  segments: Array<{ literal: string } | { regex: RegExp; names: string[]; score: number }>;
  item: Record<string, unknown>;
}

interface ApiState {
  api: ApiName;
  doc: SwaggerDoc;
  basePath: string;
  templates: CompiledTemplate[];
  ajv: Ajv;
  docId: string;
  validators: Map<string, ValidateFunction | null>;
  /** Converted schema node → where it came from (`identityDetail/allOf/1`), for error messages. */
  origins: WeakMap<object, string>;
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch'];
const MAX_ERRORS = 25;
const MAX_BODY_CHARS = 1500;

/** Builds a validator from already-parsed swagger documents (used by `loadSpecValidator` and tests). */
export function createSpecValidator(docs: Record<ApiName, SwaggerDoc>): SpecValidator {
  const states = {} as Record<ApiName, ApiState>;
  for (const api of API_NAMES) states[api] = buildState(api, docs[api]);

  const resolveInternal = (api: ApiName, method: string, url: string, status?: number) => {
    const state = states[api];
    if (!state) throw new Error(`spec-validator: unknown api '${String(api)}' (expected client or management)`);
    const m = method.toLowerCase();
    const fail = (msg: string, template?: string): never => {
      const suffix = status === undefined ? '' : ` → ${status}`;
      throw new SpecValidationError(`[spec:${api}] ${method.toUpperCase()} ${url}${suffix}: ${msg}`, {
        api,
        method: m,
        url,
        ...(template === undefined ? {} : { template }),
        ...(status === undefined ? {} : { status }),
      });
    };
    const path = relativePath(states, state, url, fail);
    const match = matchTemplate(state.templates, path);
    if (!match) return fail(`no path template of the ${api} spec matches '${path}'`);
    const op = match.tpl.item[m] as Record<string, unknown> | undefined;
    if (!op || typeof op !== 'object') {
      const allowed = HTTP_METHODS.filter((x) => x in match.tpl.item).map((x) => x.toUpperCase());
      return fail(
        `the spec declares no ${method.toUpperCase()} operation for ${match.tpl.template} (declared: ${allowed.join(', ') || 'none'})`,
        match.tpl.template,
      );
    }
    return { state, m, op, template: match.tpl.template, params: match.params, fail };
  };

  return {
    resolve(api, method, url) {
      const { state, m, op, template, params } = resolveInternal(api, method, url);
      return {
        api,
        method: m,
        template,
        params,
        operationId: typeof op.operationId === 'string' ? op.operationId : undefined,
        statuses: Object.keys((op.responses as Record<string, unknown>) ?? {}),
        produces: producesOf(state.doc, op),
      };
    },

    validate(api, method, url, status, body, contentType) {
      const { state, m, op, template } = resolveInternal(api, method, url, status);
      const where = `[spec:${api}] ${method.toUpperCase()} ${template} → ${status}`;
      const fail = (msg: string, errors?: string[]): never => {
        throw new SpecValidationError(
          `${where}: ${msg}\n  url: ${url}${errors ? `\n${errors.map((e) => `  - ${e}`).join('\n')}` : ''}\n  body: ${preview(body)}`,
          {
            api,
            method: m,
            url,
            template,
            status,
            ...(errors ? { errors } : {}),
          },
        );
      };
      const responses = (op.responses ?? {}) as Record<string, unknown>;
      const statusKey = String(status);
      const key = statusKey in responses ? statusKey : 'default' in responses ? 'default' : undefined;
      if (key === undefined) {
        // The reference answers some errors with statuses the spec does not declare (404 on deletes,
        // 400 on enroll and MFA codes, 409, 501/503): such a body must still be the error envelope.
        if (status >= 400 && state.doc.definitions?.apiErrorEnvelope) {
          const envelope = compiledFor(state, 'undeclared-error', { $ref: '#/definitions/apiErrorEnvelope' });
          if (!envelope || envelope(body)) return;
          return fail(
            'undeclared error status whose body is not the error envelope',
            formatErrors(envelope.errors ?? [], body, state.origins),
          );
        }
        return fail(
          `status ${status} is not declared by the operation (declared: ${Object.keys(responses).join(', ')})`,
        );
      }
      const response = derefResponse(state.doc, responses[key]);
      const schema = response.schema as Record<string, unknown> | undefined;
      if (!schema || typeof schema !== 'object') return; // no schema: status only
      const produces = producesOf(state.doc, op);
      const nonJsonMedia = produces.filter((p) => !isJsonMedia(p));
      if (schema.type === 'file') return;
      if (schema.type === 'string' && nonJsonMedia.length > 0) return; // raw payload (PEM, JWT, PKCS#7)
      if (nonJsonMedia.length === produces.length) return; // operation produces no JSON
      if (contentType !== undefined && contentType.trim() !== '' && !isJsonMedia(contentType)) {
        const media = mediaType(contentType);
        if (produces.some((p) => mediaType(p) === media)) return;
        if (isEmptyBody(body)) return;
        return fail(
          `content-type '${contentType}' is neither JSON nor produced by the operation (produces: ${produces.join(', ')})`,
        );
      }
      if (body === undefined) return fail('the response body is empty but the spec declares a JSON schema');
      const validateFn = compiledFor(state, `${m} ${template} ${key}`, schema);
      if (!validateFn || validateFn(body)) return;
      return fail(
        `body does not match ${describeSchema(schema)}`,
        formatErrors(validateFn.errors ?? [], body, state.origins),
      );
    },
  };
}

function buildState(api: ApiName, doc: SwaggerDoc): ApiState {
  if (!doc || typeof doc !== 'object' || !doc.paths) throw new Error(`spec-validator: the ${api} spec has no paths`);
  const docId = `https://spec-validator.local/${api}.json`;
  const { definitions } = prepareDefinitions(doc.definitions ?? {}, docId);
  const ajv = new Ajv({
    allErrors: true,
    verbose: true,
    strict: true,
    strictTypes: false,
    strictRequired: false,
    allowUnionTypes: true,
    validateFormats: true,
  });
  addFormats(ajv);
  const origins = new WeakMap<object, string>();
  for (const [name, def] of Object.entries(definitions)) recordOrigins(def, name, origins);
  ajv.addSchema({ $id: docId, definitions } as AnySchemaObject);
  const templates = Object.entries(doc.paths).map(([template, item]) => compileTemplate(template, item));
  return { api, doc, basePath: normalizeBase(doc.basePath), templates, ajv, docId, validators: new Map(), origins };
}

function compiledFor(state: ApiState, key: string, schema: Record<string, unknown>): ValidateFunction | null {
  let fn = state.validators.get(key);
  if (fn === undefined) {
    const converted = convertSchema(schema, {
      docId: state.docId,
      discriminated: new Set(),
      knownContext: new Set(),
      definitions: state.doc.definitions ?? {},
    });
    recordOrigins(converted, `(response ${key})`, state.origins);
    fn = state.ajv.compile(converted as AnySchemaObject);
    state.validators.set(key, fn);
  }
  return fn;
}

// ---------------------------------------------------------------------------------------------
// Paths

function normalizeBase(base: string | undefined): string {
  if (!base || base === '/') return '';
  return base.endsWith('/') ? base.slice(0, -1) : base;
}

function relativePath(
  states: Record<ApiName, ApiState>,
  state: ApiState,
  url: string,
  fail: (msg: string) => never,
): string {
  let path: string;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    path = new URL(url).pathname;
  } else {
    path = url.split(/[?#]/, 1)[0] ?? '';
  }
  if (!path.startsWith('/')) path = `/${path}`;
  const under = (base: string) => base !== '' && (path === base || path.startsWith(`${base}/`));
  if (under(state.basePath)) {
    path = path.slice(state.basePath.length);
  } else {
    for (const other of Object.values(states)) {
      if (other !== state && under(other.basePath)) {
        fail(`the path is under the ${other.api} API base path ${other.basePath}, not ${state.basePath}`);
      }
    }
  }
  if (path.length > 1 && path.endsWith('/')) path = path.replace(/\/+$/, '');
  return path === '' ? '/' : path;
}

function compileTemplate(template: string, item: Record<string, unknown>): CompiledTemplate {
  const segments = splitPath(template).map((seg) => {
    if (!seg.includes('{')) return { literal: seg };
    const names: string[] = [];
    let source = '';
    let last = 0;
    for (const m of seg.matchAll(/\{([^}]+)\}/g)) {
      source += escapeRegex(seg.slice(last, m.index)) + '(.+?)';
      names.push(m[1] ?? '');
      last = (m.index ?? 0) + m[0].length;
    }
    source += escapeRegex(seg.slice(last));
    const pure = /^\{[^}]+\}$/.test(seg);
    return { regex: new RegExp(`^${source}$`), names, score: pure ? 0 : 1 };
  });
  return { template, segments, item: item ?? {} };
}

function splitPath(path: string): string[] {
  return path === '/' ? [] : path.replace(/^\//, '').split('/');
}

function matchTemplate(templates: CompiledTemplate[], path: string) {
  const parts = splitPath(path).map((p) => {
    try {
      return decodeURIComponent(p);
    } catch {
      return p;
    }
  });
  let best: { tpl: CompiledTemplate; params: Record<string, string>; scores: number[] } | undefined;
  for (const tpl of templates) {
    if (tpl.segments.length !== parts.length) continue;
    const params: Record<string, string> = {};
    const scores: number[] = [];
    let ok = true;
    for (let i = 0; i < parts.length && ok; i++) {
      const seg = tpl.segments[i];
      const part = parts[i] ?? '';
      if (!seg) ok = false;
      else if ('literal' in seg) {
        ok = seg.literal === part;
        scores.push(2);
      } else {
        const m = part === '' ? null : seg.regex.exec(part);
        if (!m) ok = false;
        else {
          seg.names.forEach((n, k) => {
            params[n] = m[k + 1] ?? '';
          });
          scores.push(seg.score);
        }
      }
    }
    if (ok && (!best || compareScores(scores, best.scores) > 0)) best = { tpl, params, scores };
  }
  return best;
}

function compareScores(a: number[], b: number[]): number {
  for (let i = 0; i < a.length; i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// ---------------------------------------------------------------------------------------------
// Responses and media types

function derefResponse(doc: SwaggerDoc, response: unknown): Record<string, unknown> {
  let r = response as Record<string, unknown>;
  for (let i = 0; i < 10 && r && typeof r.$ref === 'string'; i++) {
    const name = (r.$ref as string).replace(/^#\/responses\//, '');
    r = (doc.responses?.[name] ?? {}) as Record<string, unknown>;
  }
  return r ?? {};
}

function producesOf(doc: SwaggerDoc, op: Record<string, unknown>): string[] {
  const p = (op.produces ?? doc.produces) as string[] | undefined;
  return Array.isArray(p) && p.length > 0 ? p : ['application/json'];
}

function mediaType(contentType: string): string {
  return (contentType.split(';', 1)[0] ?? '').trim().toLowerCase();
}

function isJsonMedia(contentType: string): boolean {
  const m = mediaType(contentType);
  return m === 'application/json' || m.endsWith('+json');
}

function isEmptyBody(body: unknown): boolean {
  if (body === undefined || body === null || body === '') return true;
  if (body instanceof Uint8Array || body instanceof ArrayBuffer) return body.byteLength === 0;
  return false;
}

// ---------------------------------------------------------------------------------------------
// Schema preparation

type Json = Record<string, unknown>;

interface ConvertCtx {
  docId: string;
  /** Base definitions with a discriminator: refs to them dispatch, except in a subtype's own allOf. */
  discriminated: Set<string>;
  /** Property names defined by the enclosing allOf composition (for the `required` clean-up). */
  knownContext: Set<string>;
  definitions?: Record<string, unknown>;
  dropped?: string[];
  where?: string;
  /** Inside the top-level allOf of a discriminator subtype: refs to the base stay plain. */
  plainBase?: boolean;
}

/** JSON-schema keywords kept from swagger schemas; everything else is dropped. */
const KEPT_KEYWORDS = new Set([
  '$ref',
  'type',
  'format',
  'enum',
  'required',
  'properties',
  'additionalProperties',
  'items',
  'allOf',
  'anyOf',
  'oneOf',
  'not',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  'maxProperties',
]);

/** Formats checked by ajv (see `addFormats`); others are dropped from the schemas. */
const ENFORCED_FORMATS = new Set(['date-time', 'uri', 'url', 'int32', 'int64', 'byte']);

const BASE_SUFFIX = '__base';
const EXT_SUFFIX = '__ext';

/**
 * Converts swagger 2.0 `definitions` into draft-07 definitions for ajv, with refs rewritten to
 * `${docId}#/definitions/…`. Also returns the `required` entries that were dropped because no
 * property of that name is defined (`definition: property`).
 */
export function prepareDefinitions(
  rawDefinitions: Record<string, unknown>,
  docId: string,
): { definitions: Record<string, unknown>; droppedRequired: string[] } {
  const defs = rawDefinitions;
  const out: Record<string, unknown> = {};
  const dropped: string[] = [];
  const discriminated = new Set(Object.keys(defs).filter((n) => typeof (defs[n] as Json)?.discriminator === 'string'));
  const refName = (s: unknown) => (isObj(s) && typeof s.$ref === 'string' ? definitionName(s.$ref) : undefined);
  const ctxFor = (where: string, extra: Partial<ConvertCtx> = {}): ConvertCtx => ({
    docId,
    discriminated,
    knownContext: new Set(),
    definitions: defs,
    dropped,
    where,
    ...extra,
  });

  // Subtypes: definitions whose top-level allOf references a discriminated base.
  const subtypes = new Map<string, Array<{ name: string; value: string }>>();
  for (const [name, def] of Object.entries(defs)) {
    if (!isObj(def) || !Array.isArray(def.allOf)) continue;
    for (const part of def.allOf) {
      const base = refName(part);
      if (base && discriminated.has(base)) {
        const value = typeof def['x-class'] === 'string' ? def['x-class'] : name;
        subtypes.set(base, [...(subtypes.get(base) ?? []), { name, value }]);
      }
    }
  }
  const isSubtype = (name: string) => [...subtypes.values()].some((list) => list.some((s) => s.name === name));

  for (const [name, def] of Object.entries(defs)) {
    if (!isObj(def)) {
      out[name] = def;
      continue;
    }
    if (discriminated.has(name)) {
      const prop = def.discriminator as string;
      out[`${name}${BASE_SUFFIX}`] = convertSchema(def, ctxFor(name));
      const subs = subtypes.get(name) ?? [];
      const dispatch: Json[] = [{ $ref: refTo(docId, `${name}${BASE_SUFFIX}`) }];
      if (subs.length > 0) {
        dispatch.push({ properties: { [prop]: { enum: subs.map((s) => s.value) } } });
        for (const s of subs) {
          dispatch.push({
            if: { properties: { [prop]: { const: s.value } }, required: [prop] },
            then: { $ref: refTo(docId, `${s.name}${EXT_SUFFIX}`) },
          });
        }
      }
      out[name] = { allOf: dispatch };
      continue;
    }
    if (isSubtype(name)) {
      // Full subtype (base kept plain) for direct references, and the subtype-only parts for dispatch.
      const known = knownProperties(def, defs);
      out[name] = convertSchema(def, ctxFor(name, { plainBase: true }));
      const ext: Json = { ...def, allOf: (def.allOf as unknown[]).filter((p) => !discriminated.has(refName(p) ?? '')) };
      out[`${name}${EXT_SUFFIX}`] = convertSchema(ext, ctxFor(`${name}${EXT_SUFFIX}`, { knownContext: known }));
      continue;
    }
    out[name] = convertSchema(def, ctxFor(name));
  }
  return { definitions: out, droppedRequired: [...new Set(dropped)].sort() };
}

function convertSchema(schema: unknown, ctx: ConvertCtx): unknown {
  if (typeof schema === 'boolean') return schema;
  if (!isObj(schema)) return {};
  const out: Json = {};

  if (typeof schema.$ref === 'string') {
    const name = definitionName(schema.$ref);
    if (name === undefined) throw new Error(`spec-validator: unsupported $ref '${schema.$ref}'`);
    const target = ctx.plainBase && ctx.discriminated.has(name) ? `${name}${BASE_SUFFIX}` : name;
    out.$ref = refTo(ctx.docId, target);
    return applyNullable(schema, out);
  }

  // Property names known at this level (own + allOf parts + enclosing composition).
  const known = new Set([...ctx.knownContext, ...knownProperties(schema, ctx.definitions ?? {})]);
  const child = (where: string, extra: Partial<ConvertCtx> = {}): ConvertCtx => ({
    ...ctx,
    knownContext: new Set(),
    plainBase: false,
    where: `${ctx.where ?? ''}${where}`,
    ...extra,
  });

  for (const [key, value] of Object.entries(schema)) {
    if (!KEPT_KEYWORDS.has(key)) continue;
    switch (key) {
      case 'type':
        if (value !== 'file') out.type = value;
        break;
      case 'format':
        if (typeof value === 'string' && ENFORCED_FORMATS.has(value)) out.format = value;
        break;
      case 'properties': {
        const props: Json = {};
        for (const [pname, pschema] of Object.entries((value ?? {}) as Json)) {
          let converted = convertSchema(pschema, child(`.${pname}`)) as Json;
          if (pname === 'href') converted = withoutUriFormat(converted);
          props[pname] = converted;
        }
        out.properties = props;
        break;
      }
      case 'additionalProperties':
        out.additionalProperties = isBareObject(value)
          ? applyNullable(value as Json, {})
          : typeof value === 'boolean'
            ? value
            : convertSchema(value, child('{}'));
        break;
      case 'items':
        out.items = Array.isArray(value)
          ? value.map((v, i) => convertSchema(v, child(`[${i}]`)))
          : convertSchema(value, child('[]'));
        break;
      case 'allOf':
        out.allOf = (value as unknown[]).map((v, i) =>
          convertSchema(v, child(`/allOf${i}`, { knownContext: known, plainBase: ctx.plainBase === true })),
        );
        break;
      case 'anyOf':
      case 'oneOf':
        out[key] = (value as unknown[]).map((v, i) => convertSchema(v, child(`/${key}${i}`)));
        break;
      case 'not':
        out.not = convertSchema(value, child('/not'));
        break;
      case 'required': {
        const list = (value as unknown[]).filter((p): p is string => typeof p === 'string');
        const kept = list.filter((p) => known.has(p) || definesAnything(schema));
        for (const p of list) if (!kept.includes(p)) ctx.dropped?.push(`${ctx.where ?? '?'}: ${p}`);
        if (kept.length > 0) out.required = [...new Set(kept)];
        break;
      }
      case 'exclusiveMinimum':
      case 'exclusiveMaximum': {
        const bound = key === 'exclusiveMinimum' ? schema.minimum : schema.maximum;
        if (value === true && typeof bound === 'number') out[key] = bound;
        else if (typeof value === 'number') out[key] = value;
        break;
      }
      case 'minimum':
      case 'maximum': {
        const exclusive = key === 'minimum' ? schema.exclusiveMinimum : schema.exclusiveMaximum;
        if (exclusive !== true) out[key] = value;
        break;
      }
      default:
        out[key] = value;
    }
  }
  return applyNullable(schema, out);
}

/** `x-nullable: true` → also accept null. */
function applyNullable(source: Json, converted: Json): Json {
  if (source['x-nullable'] !== true) return converted;
  const simple =
    typeof converted.type === 'string' &&
    !('$ref' in converted) &&
    !('allOf' in converted) &&
    !('anyOf' in converted) &&
    !('oneOf' in converted) &&
    !('not' in converted);
  if (simple) {
    const out: Json = { ...converted, type: [converted.type, 'null'] };
    if (Array.isArray(converted.enum) && !converted.enum.includes(null)) out.enum = [...converted.enum, null];
    return out;
  }
  if (Object.keys(converted).length === 0) return converted; // already accepts anything
  return { anyOf: [{ type: 'null' }, converted] };
}

function withoutUriFormat(schema: Json): Json {
  if (schema.format === 'uri' || schema.format === 'url') {
    const { format: _format, ...rest } = schema;
    return rest;
  }
  return schema;
}

/** `{type: object}` with nothing else: go-swagger's `interface{}`. */
function isBareObject(schema: unknown): boolean {
  if (!isObj(schema) || schema.type !== 'object') return false;
  return Object.keys(schema).every((k) => !KEPT_KEYWORDS.has(k) || k === 'type');
}

/** A schema whose `additionalProperties` is a schema or `true` defines every property name. */
function definesAnything(schema: Json): boolean {
  return schema.additionalProperties === true || isObj(schema.additionalProperties);
}

/** Property names defined by a schema, following `allOf` and `$ref` (not into properties). */
function knownProperties(schema: unknown, defs: Record<string, unknown>, seen = new Set<string>()): Set<string> {
  const names = new Set<string>();
  if (!isObj(schema)) return names;
  if (typeof schema.$ref === 'string') {
    const name = definitionName(schema.$ref);
    if (name === undefined || seen.has(name)) return names;
    seen.add(name);
    return knownProperties(defs[name], defs, seen);
  }
  if (isObj(schema.properties)) for (const k of Object.keys(schema.properties)) names.add(k);
  for (const key of ['allOf', 'anyOf', 'oneOf'] as const) {
    const parts = schema[key];
    if (Array.isArray(parts)) for (const p of parts) for (const n of knownProperties(p, defs, seen)) names.add(n);
  }
  return names;
}

function definitionName(ref: string): string | undefined {
  const m = /^#\/definitions\/(.+)$/.exec(ref);
  return m
    ? decodeURIComponent(m[1] ?? '')
        .replace(/~1/g, '/')
        .replace(/~0/g, '~')
    : undefined;
}

function refTo(docId: string, name: string): string {
  return `${docId}#/definitions/${encodeURIComponent(name.replace(/~/g, '~0').replace(/\//g, '~1'))}`;
}

function isObj(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// ---------------------------------------------------------------------------------------------
// Formats

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:Z|[+-](\d{2}):(\d{2}))$/;

/** RFC 3339 date-time as Go's `time.Parse(time.RFC3339, …)` accepts it. */
export function isRfc3339DateTime(value: string): boolean {
  const m = RFC3339.exec(value);
  if (!m) return false;
  const [year, month, day, hour, minute, second, offH, offM] = m.slice(1).map((x) => (x === undefined ? 0 : Number(x)));
  if (month === undefined || month < 1 || month > 12) return false;
  const daysInMonth = new Date(Date.UTC(year ?? 0, month, 0)).getUTCDate();
  if (day === undefined || day < 1 || day > daysInMonth) return false;
  if ((hour ?? 0) > 23 || (minute ?? 0) > 59 || (second ?? 0) > 59) return false;
  if ((offH ?? 0) > 23 || (offM ?? 0) > 59) return false;
  return true;
}

function addFormats(ajv: Ajv): void {
  const plugin = ((formatsPluginImport as unknown as { default?: FormatsPlugin }).default ??
    formatsPluginImport) as FormatsPlugin;
  const uri = plugin.get('uri', 'full');
  const isUri =
    typeof uri === 'function'
      ? uri
      : uri instanceof RegExp
        ? (s: string) => uri.test(s)
        : (s: string) => (uri as { validate: (x: string) => boolean }).validate(s);
  ajv.addFormat('date-time', { type: 'string', validate: isRfc3339DateTime });
  ajv.addFormat('uri', { type: 'string', validate: (s: string) => isUri(s) });
  ajv.addFormat('url', { type: 'string', validate: (s: string) => isUri(s) });
  ajv.addFormat('int32', {
    type: 'number',
    validate: (n: number) => Number.isInteger(n) && n >= -2147483648 && n <= 2147483647,
  });
  // int64 as far as a parsed double tells: math.MaxInt64 (an unlimited list's `limit`, in the reference
  // too) parses to 2^63, so the range ends there.
  ajv.addFormat('int64', {
    type: 'number',
    validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 63) && n <= 2 ** 63,
  });
  ajv.addFormat('byte', {
    type: 'string',
    validate: /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/,
  });
}

// ---------------------------------------------------------------------------------------------
// Messages

function describeSchema(schema: Json): string {
  return typeof schema.$ref === 'string' ? `schema ${schema.$ref}` : `the inline schema ${preview(schema, 200)}`;
}

function recordOrigins(node: unknown, path: string, origins: WeakMap<object, string>): void {
  if (Array.isArray(node)) {
    for (const [i, n] of node.entries()) recordOrigins(n, `${path}/${i}`, origins);
  } else if (isObj(node)) {
    origins.set(node, path);
    for (const [k, v] of Object.entries(node))
      if (typeof v === 'object' && v !== null && k !== 'enum' && k !== 'required')
        recordOrigins(v, `${path}/${k}`, origins);
  }
}

function formatErrors(errors: ErrorObject[], body: unknown, origins: WeakMap<object, string>): string[] {
  // The `x-nullable` wrapper (`anyOf [{type: null}, …]`) and discriminator dispatch (`if/then`) add
  // errors that only restate the real ones: fold them away.
  const isNullBranch = (e: ErrorObject) =>
    e.keyword === 'type' && (e.params as { type?: unknown }).type === 'null' && /\/anyOf\/0\/type$/.test(e.schemaPath);
  const nullablePaths = new Set(errors.filter(isNullBranch).map((e) => e.instancePath));
  const hasDeeper = (e: ErrorObject) =>
    errors.some(
      (o) =>
        o !== e &&
        o.keyword !== 'anyOf' &&
        o.keyword !== 'if' &&
        !isNullBranch(o) &&
        (o.instancePath === e.instancePath || o.instancePath.startsWith(`${e.instancePath}/`)),
    );
  const relevant = errors.filter((e) => {
    if (isNullBranch(e)) return false;
    if ((e.keyword === 'anyOf' || e.keyword === 'if') && hasDeeper(e)) return false;
    return true;
  });
  const lines: string[] = [];
  for (const e of relevant) {
    const at = e.instancePath === '' ? '(root)' : e.instancePath;
    const got = () => `, got ${preview(pointer(body, e.instancePath), 120)}`;
    let msg: string;
    switch (e.keyword) {
      case 'required':
        msg = `missing required property '${(e.params as { missingProperty: string }).missingProperty}'`;
        break;
      case 'enum':
        msg = `must be one of ${JSON.stringify((e.params as { allowedValues: unknown[] }).allowedValues)}${got()}`;
        break;
      case 'type':
        msg = `must be ${String((e.params as { type: unknown }).type)}${nullablePaths.has(e.instancePath) ? ' or null' : ''}${got()}`;
        break;
      case 'format':
        msg = `must match format '${(e.params as { format: string }).format}'${got()}`;
        break;
      case 'anyOf':
      case 'oneOf':
      case 'if':
        msg = e.message ?? e.keyword;
        break;
      default:
        msg = `${e.message ?? e.keyword}${got()}`;
    }
    const origin = isObj(e.parentSchema) ? origins.get(e.parentSchema) : undefined;
    const schemaAt =
      origin === undefined
        ? e.schemaPath.replace(/^https:\/\/spec-validator\.local\/[a-z]+\.json/, '')
        : `${origin}/${e.keyword}`;
    const line = `${at}: ${msg} [${schemaAt}]`;
    if (!lines.includes(line)) lines.push(line);
  }
  if (lines.length > MAX_ERRORS) return [...lines.slice(0, MAX_ERRORS), `… ${lines.length - MAX_ERRORS} more`];
  return lines;
}

function pointer(value: unknown, path: string): unknown {
  if (path === '') return value;
  let cur: unknown = value;
  for (const raw of path.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

function preview(value: unknown, max = MAX_BODY_CHARS): string {
  let text: string;
  if (value === undefined) text = '(empty)';
  else if (value instanceof Uint8Array) text = `(${value.byteLength} bytes)`;
  else {
    try {
      text = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
    } catch {
      text = String(value);
    }
  }
  return text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text;
}
