import { z } from 'zod';
import { ApiError } from './errors.ts';
import type { OperationDef } from './operation.ts';

/**
 * Input validation against the operation table, reporting the first problem the way go-openapi
 * does in the reference controller: `COULD_NOT_VALIDATE` with a cause `{field, reason, value}`,
 * e.g. `{field: "name", reason: "name in body is required", value: "<nil>"}`.
 */

/** Where a value came from, as go-openapi names it in a reason. */
export type InputLocation = 'path' | 'query' | 'body';

/** Query values as they arrive on the wire: one string, or several for a repeated parameter. */
export type RawQuery = Record<string, string | string[] | undefined>;

export interface OperationInput {
  params?: Record<string, string>;
  query?: RawQuery;
  /** The parsed JSON body, if the request had one. */
  body?: unknown;
  /** Whether the request carried a (non-empty) body; defaults to `body !== undefined`. */
  bodyPresent?: boolean;
}

export interface ValidatedInput {
  params: Record<string, string>;
  /** Declared parameters coerced to their types; undeclared ones passed through as they came. */
  query: Record<string, unknown>;
  /** The body with unknown properties stripped (the raw body when the operation declares no JSON body). */
  body: unknown;
}

// ---------------------------------------------------------------------------------------------
// Query parameter binding (used by the generated table)

/** go-swagger binds the last of repeated values of a non-array parameter and treats an empty value as absent. */
export function queryValue(value: unknown): unknown {
  const last = Array.isArray(value) ? value[value.length - 1] : value;
  return last === '' ? undefined : last;
}

/** An integer parameter: a decimal string becomes a number; anything else is left for the schema to reject. */
export function queryInteger(value: unknown): unknown {
  const raw = queryValue(value);
  return typeof raw === 'string' && /^[+-]?\d+$/.test(raw) ? Number(raw) : raw;
}

/** A boolean parameter: `true` / `false`. */
export function queryBoolean(value: unknown): unknown {
  const raw = queryValue(value);
  return raw === 'true' ? true : raw === 'false' ? false : raw;
}

/** A `collectionFormat: multi` parameter: repeated values, a single one accepted as a list of one. */
export function queryArray(value: unknown): unknown {
  if (value === undefined || Array.isArray(value)) return value;
  return [value];
}

/** `sort`, which lists read although the spec does not declare it (ZITI-FACTS §3.3). */
export const sortQueryParam = z.preprocess(queryValue, z.string().optional()).optional().meta({
  description:
    'Not in the official spec: the sort clause of a list, e.g. `name asc, createdAt desc` (ignored when the filter sorts).',
});

// ---------------------------------------------------------------------------------------------
// Input limits (docs/adr/0013-input-limits.md)

/**
 * What the edge accepts before any work is spent on a request. The reference has a 1 MiB body limit
 * (`controller/api/body_limit.go`, later releases) and no string limits; Postgres has (a b-tree entry
 * holds at most ~2.7 kB, `text`/`jsonb` refuse U+0000 and lone surrogates), so the edge does.
 */
export const inputLimits = {
  /** Request line and headers together (Node's `maxHeaderSize`); beyond: 431 with the envelope. */
  maxHeaderBytes: 64 * 1024,
  /** The URL (path and query, e.g. a long filter); beyond: 414 with the envelope. */
  maxUrlLength: 32 * 1024,
  /** A body of an operation that takes one from a logged-in caller; beyond: 413. */
  maxBodyBytes: 1024 * 1024,
  /** A body of an operation anyone may call (authenticate, enroll) or that declares none; beyond: 413. */
  maxSmallBodyBytes: 16 * 1024,
  /** Nesting of arrays and objects in a JSON body; deeper: 400 COULD_NOT_PARSE_BODY before parsing. */
  maxJsonDepth: 32,
  /** Names, ids, usernames, role attributes and roles, map keys, path parameters (characters). */
  maxNameLength: 255,
  /** Any other string: descriptions, PEM documents, JWTs, URLs, tag and config values (characters). */
  maxTextLength: 64 * 1024,
} as const;

/** Properties whose strings (or whose array's strings) are names or ids: indexed, so short. */
const namePattern =
  /^(id|name|username|externalId|method|type|typeId|roleAttributes|configTypes|configs)$|(Id|Ids|Roles)$/;

/**
 * The operations that read a body that is not JSON: those whose spec consumes another media type,
 * and the enroll endpoints, which decode a body by its content type (PEM CSR, ZITI-FACTS §8.2).
 */
const rawBodyOperations = new Set(['client.enrollOtt', 'client.enrollOttCa', 'client.enrollUpdb', 'client.enrollCa']);

export function readsRawBody(op: Pick<OperationDef, 'api' | 'operationId' | 'consumes'>): boolean {
  return (
    rawBodyOperations.has(`${op.api}.${op.operationId}`) ||
    op.consumes.some((type) => !/^application\/(.+\+)?json$/i.test(type.split(';')[0]!.trim()))
  );
}

/** The largest body an operation accepts: small for anonymous callers and for operations without a body. */
export function maxBodyBytes(op: OperationDef): number {
  const takesBody = op.body !== undefined || readsRawBody(op);
  return op.access === 'none' || !takesBody ? inputLimits.maxSmallBodyBytes : inputLimits.maxBodyBytes;
}

/**
 * Rejects JSON nested deeper than `max` with one pass over the text, before `JSON.parse` (and
 * everything after it) spends time and stack on it.
 */
export function checkJsonDepth(text: string, max: number = inputLimits.maxJsonDepth): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) {
        throw new ApiError('COULD_NOT_PARSE_BODY', {
          code: 'UNHANDLED',
          message: `the JSON body is nested deeper than ${max} levels (at offset ${i})`,
        });
      }
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
}

const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** The value shown in a cause for a rejected string: a long one is cut, the response is no echo of the request. */
function shown(value: string): string {
  return value.length > 64 ? `${value.slice(0, 64)}…` : value;
}

function checkString(value: string, field: string, location: InputLocation, max: number): void {
  if (value.includes('\u0000')) {
    throw ApiError.field(field, `${field} in ${location} must not contain NUL characters`, shown(value));
  }
  if (loneSurrogate.test(value)) {
    throw ApiError.field(
      field,
      `${field} in ${location} must be valid Unicode (it holds a lone UTF-16 surrogate)`,
      shown(value.replace(new RegExp(loneSurrogate.source, 'g'), '\ufffd')),
    );
  }
  if (value.length > max) {
    throw ApiError.field(field, `${field} in ${location} should be at most ${max} chars long`, shown(value));
  }
}

/**
 * Checks every string of a value (and every key of its objects) at the edge: no NUL, no lone
 * surrogate, at most `maxNameLength` characters for names, ids and keys, `maxTextLength` for the
 * rest. `field` is the dotted path go-openapi would name; `nameLike` whether the strings directly
 * at it are names.
 */
export function checkStrings(value: unknown, location: InputLocation, field: string, nameLike = false): void {
  const limit = nameLike ? inputLimits.maxNameLength : inputLimits.maxTextLength;
  if (typeof value === 'string') checkString(value, field, location, limit);
  else if (Array.isArray(value))
    value.forEach((item, i) => checkStrings(item, location, field === '' ? String(i) : `${field}.${i}`, nameLike));
  else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const path = field === '' ? key : `${field}.${key}`;
      checkString(key, path, location, inputLimits.maxNameLength);
      checkStrings(item, location, path, namePattern.test(key));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Validation

/**
 * Validates the path parameters, query and body of a request against its operation and returns
 * them typed and coerced. Throws `ApiError` `COULD_NOT_VALIDATE` with the first problem found.
 */
export function validateOperationInput(op: OperationDef, input: OperationInput): ValidatedInput {
  for (const [key, value] of Object.entries(input.params ?? {})) checkStrings(value, 'path', key, true);
  const params = op.params
    ? (validateValue(op.params, input.params ?? {}, 'path', 'params') as Record<string, string>)
    : { ...(input.params ?? {}) };

  const rawQuery = input.query ?? {};
  // A query value is bounded by the URL's length; it may still carry a NUL (`%00`).
  checkStrings(rawQuery, 'query', '');
  const query = op.query
    ? withoutUndefined(validateValue(op.query, rawQuery, 'query', 'query') as Record<string, unknown>)
    : { ...rawQuery };

  const present = input.bodyPresent ?? input.body !== undefined;
  const name = op.bodyName ?? 'body';
  let body: unknown;
  if (!present || input.body === null) {
    // go-swagger: errors.Required(<body parameter name>, "body", "") when the request has no body.
    if (op.body && op.bodyRequired) throw ApiError.field(name, `${name} in body is required`, '');
    body = undefined;
  } else if (input.body === undefined || !op.body) {
    // A body that is not JSON (PEM, CSR) is the owner's to read; a body the operation does not declare passes as is.
    body = input.body;
  } else {
    // The reference patches the fields whose JSON key holds a value (ziti 1.1.9 `controller/api/json_fields.go`
    // GetJsonFields flattens nested objects and skips a null): `{"roleAttributes": null}` leaves the attribute
    // as it is, x-nullable or not, and so do `"tags": {}` and `"primary": {"cert": {}}` (no field in them).
    const given = op.method === 'PATCH' ? patchedFields(input.body) : input.body;
    body = validateValue(op.body, keysAsGoDecodes(op.body, given), 'body', name);
  }
  if (body !== undefined) checkStrings(body, 'body', typeof body === 'object' ? '' : name);
  return { params, query, body };
}

/**
 * The body with its keys as the reference's decoder reads them: Go's `encoding/json` matches an
 * object's keys to its fields case-insensitively, an exact match first (the CLI sends some bodies
 * with Go's field names, e.g. an OS posture check's `{"Type": …, "Versions": …}`). A key that
 * matches no field, or whose exact name is also given, is left as it is; map keys (tags, appData)
 * are data and are never changed. Copies only the objects it changes.
 */
export function keysAsGoDecodes(schema: z.core.$ZodType, value: unknown, depth = 0): unknown {
  if (depth > 64 || value === null || typeof value !== 'object') return value;
  let s = unwrap(schema, value);
  if (!s) return value;
  let def = s._zod.def as z.core.$ZodTypeDef & Record<string, unknown>;
  if (def.type === 'union' && typeof def.discriminator === 'string' && !Array.isArray(value)) {
    // The discriminator itself may come in another case: found, the variant it names applies.
    const wanted = def.discriminator;
    const given = Object.keys(value).find((k) => k !== wanted && k.toLowerCase() === wanted.toLowerCase());
    if (given !== undefined && !(wanted in value)) {
      const renamed = renameKey(value as Record<string, unknown>, given, wanted);
      s = unwrap(schema, renamed);
      if (!s) return value;
      def = s._zod.def as z.core.$ZodTypeDef & Record<string, unknown>;
      value = renamed;
    }
  }
  if (def.type === 'array' && Array.isArray(value)) {
    let out: unknown[] | undefined;
    value.forEach((item, i) => {
      const folded = keysAsGoDecodes(def.element as z.core.$ZodType, item, depth + 1);
      if (folded !== item) (out ??= [...value])[i] = folded;
    });
    return out ?? value;
  }
  if (Array.isArray(value)) return value;
  const record = value as Record<string, unknown>;
  if (def.type === 'record') {
    let out: Record<string, unknown> | undefined;
    for (const [k, v] of Object.entries(record)) {
      const folded = keysAsGoDecodes(def.valueType as z.core.$ZodType, v, depth + 1);
      if (folded !== v) (out ??= { ...record })[k] = folded;
    }
    return out ?? value;
  }
  if (def.type !== 'object') return value;
  const shape = def.shape as Record<string, z.core.$ZodType>;
  let lower: Map<string, string> | undefined;
  let out: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(record)) {
    let target = k;
    if (!Object.hasOwn(shape, k)) {
      lower ??= new Map(Object.keys(shape).map((n) => [n.toLowerCase(), n]));
      const match = lower.get(k.toLowerCase());
      if (match !== undefined && !Object.hasOwn(record, match)) target = match;
    }
    // Own fields only: a key such as `constructor` names no field, whatever the prototype holds.
    const field = Object.hasOwn(shape, target) ? shape[target] : undefined;
    const folded = field ? keysAsGoDecodes(field, v, depth + 1) : v;
    if (target === k && folded === v) continue;
    out ??= { ...record };
    if (target !== k) delete out[k];
    out[target] = folded;
  }
  return out ?? value;
}

function renameKey(value: Record<string, unknown>, from: string, to: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k === from ? to : k] = v;
  return out;
}

/**
 * A PATCH body reduced to the fields the reference updates: properties holding null dropped, at
 * every depth of nested objects, and then objects left without any property (arrays and their
 * items are values, kept as given). The top level stays an object.
 */
function patchedFields(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || depth > 64) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (v === null) continue;
    const kept = patchedFields(v, depth + 1);
    if (kept !== null && typeof kept === 'object' && !Array.isArray(kept) && Object.keys(kept).length === 0) continue;
    out[k] = kept;
  }
  return out;
}

/**
 * Validates one value against a schema, reporting the first issue as go-openapi would; `name`
 * stands for the value itself when the issue is at its root (the body parameter's name).
 *
 * A null given for an optional property that is not `x-nullable` is dropped, as Go's decoder leaves
 * such a field at its zero value; a null given for a required one is reported as missing.
 */
export function validateValue(schema: z.ZodType, value: unknown, location: InputLocation, name: string): unknown {
  let candidate = value;
  for (let attempt = 0; attempt < 256; attempt++) {
    const result = schema.safeParse(candidate);
    if (result.success) return result.data;
    const issue = result.error.issues[0]!;
    const last = issue.path[issue.path.length - 1];
    if (
      location === 'body' &&
      issue.code === 'invalid_type' &&
      typeof last === 'string' &&
      valueAt(candidate, issue.path) === null
    ) {
      candidate = withoutKey(candidate, issue.path);
      continue;
    }
    throw issueToApiError(issue, schema, candidate, location, name);
  }
  throw new ApiError('COULD_NOT_VALIDATE', { code: 'UNHANDLED', message: 'too many null properties' });
}

type Issue = z.core.$ZodIssue;
type Segment = PropertyKey;

function issueToApiError(
  issue: Issue,
  root: z.ZodType,
  input: unknown,
  location: InputLocation,
  name: string,
): ApiError {
  const path = issue.path;
  const field = path.length > 0 ? path.map(String).join('.') : name;
  const value = valueAt(input, path);
  const missing = value === undefined || value === null || (location === 'query' && value === '');
  const say = (text: string, shown: unknown = value) => ApiError.field(field, `${field} in ${location} ${text}`, shown);
  const required = () => {
    // go-swagger's value for a missing query parameter is the (empty) list of raw values.
    if (location === 'query') return say('is required', value === undefined ? [] : value);
    return say('is required');
  };

  switch (issue.code) {
    case 'invalid_type':
      if (missing) return required();
      return say(
        `must be of type ${typeNameAt(root, path, input, location) ?? issue.expected}${typeof value === 'string' ? `: ${JSON.stringify(value)}` : ''}`,
      );
    case 'invalid_value':
      if (missing) return required();
      return say(`should be one of [${issue.values.map(String).join(' ')}]`);
    case 'invalid_union': {
      const discriminated = issue as Issue & { discriminator?: string; options?: unknown[] };
      if (discriminated.discriminator !== undefined) {
        // go-swagger: validate.RequiredString(<discriminator>, "body", "") before choosing the subtype.
        if (missing) return say('is required', '');
        return say(`should be one of [${(discriminated.options ?? []).map(String).join(' ')}]`);
      }
      if (missing) return required();
      return say('is invalid');
    }
    case 'too_small': {
      const bound = String(issue.minimum);
      if (issue.origin === 'string') return say(`should be at least ${bound} chars long`);
      if (issue.origin === 'array' || issue.origin === 'set') return say(`should have at least ${bound} items`);
      return say(issue.inclusive ? `should be greater than or equal to ${bound}` : `should be greater than ${bound}`);
    }
    case 'too_big': {
      const bound = String(issue.maximum);
      if (issue.origin === 'string') return say(`should be at most ${bound} chars long`);
      if (issue.origin === 'array' || issue.origin === 'set') return say(`should have at most ${bound} items`);
      return say(issue.inclusive ? `should be less than or equal to ${bound}` : `should be less than ${bound}`);
    }
    case 'invalid_format':
      if (issue.format === 'regex' && issue.pattern) return say(`should match '${issue.pattern}'`);
      return say(`must be of type ${issue.format}: ${JSON.stringify(String(value))}`);
    case 'not_multiple_of':
      return say(`should be a multiple of ${String(issue.divisor)}`);
    default:
      if (missing) return required();
      return say('is invalid');
  }
}

/** The type name a reason uses: the swagger type in a body, the Go type go-swagger binds a query parameter to. */
function typeNameAt(root: z.ZodType, path: Segment[], input: unknown, location: InputLocation): string | undefined {
  const leaf = schemaAt(root, path, input);
  if (!leaf) return undefined;
  const def = leaf._zod.def as z.core.$ZodTypeDef & { format?: string };
  switch (def.type) {
    case 'number': {
      const integer = def.format !== undefined && /int/.test(def.format);
      if (location === 'query') return integer ? 'int64' : 'float64';
      return integer ? 'integer' : 'number';
    }
    case 'boolean':
      return location === 'query' ? 'bool' : 'boolean';
    case 'string':
    case 'enum':
    case 'literal':
      return 'string';
    case 'array':
      return 'array';
    case 'object':
    case 'record':
    case 'union':
      return 'object';
    default:
      return undefined;
  }
}

/** The schema that applies at `path` of `input` (through wrappers, arrays, maps and discriminated unions). */
function schemaAt(root: z.core.$ZodType, path: Segment[], input: unknown): z.core.$ZodType | undefined {
  let schema: z.core.$ZodType | undefined = unwrap(root, input);
  let value = input;
  for (const segment of path) {
    if (!schema) return undefined;
    const def = schema._zod.def as z.core.$ZodTypeDef & Record<string, unknown>;
    switch (def.type) {
      case 'object':
        schema = (def.shape as Record<PropertyKey, z.core.$ZodType>)[segment];
        break;
      case 'array':
        schema = def.element as z.core.$ZodType;
        break;
      case 'record':
        schema = def.valueType as z.core.$ZodType;
        break;
      default:
        return undefined;
    }
    value = child(value, segment);
    schema = schema ? unwrap(schema, value) : undefined;
  }
  return schema;
}

function unwrap(schema: z.core.$ZodType, value: unknown): z.core.$ZodType | undefined {
  let current: z.core.$ZodType | undefined = schema;
  for (let depth = 0; current && depth < 32; depth++) {
    const def = current._zod.def as z.core.$ZodTypeDef & Record<string, unknown>;
    switch (def.type) {
      case 'optional':
      case 'nullable':
      case 'default':
      case 'prefault':
      case 'readonly':
      case 'catch':
      case 'nonoptional':
        current = def.innerType as z.core.$ZodType;
        break;
      case 'pipe':
        current = def.out as z.core.$ZodType;
        break;
      case 'lazy':
        current = (def.getter as () => z.core.$ZodType)();
        break;
      case 'union': {
        const discriminator = def.discriminator as string | undefined;
        if (discriminator === undefined) return current;
        const wanted = child(value, discriminator);
        const options = def.options as z.core.$ZodType[];
        const match = options.find((option) => option._zod.propValues?.[discriminator]?.has(wanted as never));
        if (!match) return current;
        current = match;
        break;
      }
      default:
        return current;
    }
  }
  return current;
}

function child(value: unknown, segment: Segment): unknown {
  if (value === null || typeof value !== 'object') return undefined;
  return (value as Record<PropertyKey, unknown>)[segment];
}

function valueAt(value: unknown, path: Segment[]): unknown {
  let current = value;
  for (const segment of path) current = child(current, segment);
  return current;
}

/** A copy of `value` without the property at `path` (copying only along the path). */
function withoutKey(value: unknown, path: Segment[]): unknown {
  if (path.length === 0 || value === null || typeof value !== 'object') return value;
  const [head, ...rest] = path as [Segment, ...Segment[]];
  const copy = (Array.isArray(value) ? [...value] : { ...value }) as Record<PropertyKey, unknown>;
  if (rest.length === 0) delete copy[head];
  else copy[head] = withoutKey(copy[head], rest);
  return copy;
}

function withoutUndefined(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined));
}
