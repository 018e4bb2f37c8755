import { createHash } from 'node:crypto';
import type { FieldCause } from '@ziti/contracts';
import { stringifyValue } from '@ziti/contracts';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import formatsImport, { type FormatsPlugin } from 'ajv-formats';
import type { SchemaValidator } from './config-types.ports.ts';

const addFormats = ((formatsImport as unknown as { default?: FormatsPlugin }).default ??
  formatsImport) as FormatsPlugin;

/** Draft-04/06/07 schemas are read as draft-07, as the reference's library accepts all three. */
const knownDrafts = /^https?:\/\/json-schema\.org\/draft-0[467]\/schema#?$/;

/** Bounds the work a hostile schema can cause at compile time and the memory of the cache. */
const maxSchemaBytes = 256 * 1024;
const cacheSize = 200;

function newAjv(): Ajv {
  // strict: false ignores unknown keywords and formats, as the reference's validator does;
  // `idn-hostname` (used by the built-in types) is documentation only there too.
  const ajv = new Ajv({ strict: false, allErrors: false, logger: false, validateSchema: true });
  addFormats(ajv);
  ajv.addFormat('idn-hostname', true);
  return ajv;
}

function withoutDraftMarker(schema: Record<string, unknown>): Record<string, unknown> {
  if (typeof schema.$schema === 'string' && knownDrafts.test(schema.$schema)) {
    const { $schema: _drop, ...rest } = schema;
    return rest;
  }
  return schema;
}

/** A JSON pointer (`/a/0/b`) as the reference names fields: `(root)`, `a.0.b`. */
function fieldOf(instancePath: string): string {
  if (!instancePath) return '(root)';
  return instancePath
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
}

function valueAt(data: unknown, instancePath: string): unknown {
  let current = data;
  if (!instancePath) return current;
  for (const raw of instancePath.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

const jsonType = (v: unknown) =>
  v === null ? 'null' : Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : typeof v;

/** A description in the reference's (gojsonschema) words for the common keywords. */
function describe(e: ErrorObject, value: unknown): string {
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return `${String(p.missingProperty)} is required`;
    case 'type':
      return `Invalid type. Expected: ${String(p.type)}, given: ${jsonType(value)}`;
    case 'additionalProperties':
      return `Additional property ${String(p.additionalProperty)} is not allowed`;
    case 'enum':
      return `${fieldOf(e.instancePath)} must be one of the following: ${((p.allowedValues as unknown[]) ?? []).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'minimum':
      return `Must be greater than or equal to ${String(p.limit)}`;
    case 'maximum':
      return `Must be less than or equal to ${String(p.limit)}`;
    case 'minItems':
      return `Array must have at least ${String(p.limit)} items`;
    case 'uniqueItems':
      return 'array items must be unique';
    case 'pattern':
      return `Does not match pattern '${String(p.pattern)}'`;
    default:
      return e.message ?? e.keyword;
  }
}

/** JSON Schema with ajv (draft-07), compiled once per distinct schema. */
export class AjvSchemaValidator implements SchemaValidator {
  private readonly compiled = new Map<string, ValidateFunction>();

  private compile(schema: Record<string, unknown>): ValidateFunction {
    const text = JSON.stringify(schema);
    const key = createHash('sha256').update(text).digest('hex');
    const hit = this.compiled.get(key);
    if (hit) {
      this.compiled.delete(key);
      this.compiled.set(key, hit);
      return hit;
    }
    if (text.length > maxSchemaBytes) throw new Error(`the schema is larger than ${maxSchemaBytes} bytes`);
    // One Ajv per schema: `$id`s of different types (or versions of one type) never collide.
    const validate = newAjv().compile(withoutDraftMarker(schema));
    this.compiled.set(key, validate);
    if (this.compiled.size > cacheSize) this.compiled.delete(this.compiled.keys().next().value as string);
    return validate;
  }

  schemaProblem(schema: Record<string, unknown>): string | null {
    if (typeof schema.$schema === 'string' && !knownDrafts.test(schema.$schema))
      return `unsupported $schema ${schema.$schema}`;
    const ajv = newAjv();
    if (!ajv.validateSchema(withoutDraftMarker(schema))) {
      const e = ajv.errors?.[0];
      return e ? `${e.instancePath || '(root)'} ${e.message ?? e.keyword}` : 'invalid schema';
    }
    try {
      this.compile(schema);
    } catch (err) {
      return (err as Error).message;
    }
    return null;
  }

  violation(schema: Record<string, unknown>, data: unknown): FieldCause | null {
    const validate = this.compile(schema);
    if (validate(data)) return null;
    const e = validate.errors?.[0];
    // The reference's reason is its validation error's text (`apierror/schema.go`: "<field> is invalid:
    // <gojsonschema's description>", which itself begins with the field).
    if (!e) return { field: '(root)', reason: '(root) is invalid: (root): invalid', value: stringifyValue(data) };
    const value = valueAt(data, e.instancePath);
    const field = fieldOf(e.instancePath);
    return { field, reason: `${field} is invalid: ${field}: ${describe(e, value)}`, value: stringifyValue(value) };
  }
}
