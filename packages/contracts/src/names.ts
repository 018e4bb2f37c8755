import { ApiError } from './errors.ts';

/**
 * An entity's name as the reference checks it once the request has passed the spec (ziti
 * `controller/models` ValidateNameOnCreate): go-openapi takes `""` as present, and the model refuses
 * it with `{field: "name", reason: "name is required", value: ""}`. A name is kept as given: the
 * reference trims nothing, so `" a"` and `"a"` are two names.
 *
 * On update the reference swallows that refusal and answers 200 with nothing changed; here the
 * same 400 is answered on update too (docs/reference-differences.md).
 */
export function requireName(value: unknown, field = 'name'): string {
  if (typeof value !== 'string' || value === '') throw ApiError.field(field, `${field} is required`, value ?? '');
  return value;
}
