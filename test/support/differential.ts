/**
 * The differential conformance engine (issue 31 §1): drives the reference controller (OpenZiti
 * v1.1.9) and this controller with the same request sequence and compares their answers once what
 * legitimately differs between two installations has been normalised away.
 *
 * The sequence is data (test/support/differential-steps.ts): one `Step` per request, naming the
 * operation by method and path (`POST /identities`, resolved against the contracts' operation
 * table), the case, the caller, the body and which values of the answer to keep as variables for
 * later steps. `{name}` in a path, query, header or body string is replaced by that variable of the
 * controller the step is sent to (each controller has its own ids, tokens and secrets); a string
 * that is exactly `{name}` is replaced by the variable's value whatever its type.
 *
 * Normalisation, applied to both answers of a step together before they are compared:
 * - list items are paired first: by name, else by the name of their id, else by their content with
 *   ids masked (leftovers in that order); an item only one side has becomes "(no such item)". A
 *   list the request sorted keeps the reference's order, and a different order of the items both
 *   hold is one difference, `data (order)`;
 * - a saved variable's value becomes `<name>` wherever it appears (ids, tokens, `@id` roles, hrefs,
 *   id-keyed maps, error messages);
 * - any other id (a string under `id`, `…Id`, `…Ids`, an `@…` role, the id segment of an href, the key
 *   of an id-keyed map) becomes `<kind#n>` (`IdNamer`): two ids at the same place of the paired
 *   answers get the same name, one without a counterpart gets a name of its own; the fixed ids both
 *   controllers share (`default`, `Default`, the built-in config types, posture-check types, …) stay;
 * - timestamps (`<time>`, or `<zero-time>` for Go's zero time 0001-01-01), UUIDs (`<uuid>`), JWTs
 *   (`<jwt>`), PEM blocks (`<pem>`), hex fingerprints (`<fingerprint>`), long base64 (`<base64>`),
 *   request ids, versions and build data, TOTP secrets and recovery codes, and each controller's
 *   own listener addresses (`<api-address>`, `<ctrl-address>`);
 * - arrays of strings that are sets (`filterableFields`, `…Roles`, `…Ids`, `configs`, …) are sorted
 *   and compared as sets (what only one side has).
 *
 * Comparison: the status (a different status is one difference, with both error codes), the media
 * type, then the whole body: every field name, JSON type, null versus absent, `meta`, `_links` and
 * every value that is left after normalisation. Paths are `data.roleAttributes`, `data[].name` (array
 * positions collapse to `[]`); pseudo-paths `<status>`, `<content-type>`, `<body>` (non-JSON text),
 * `<spec>` (our answer fails the official spec where the reference's passes). A step may compare
 * less (`compare: 'status'` for bodies that are random by nature: QR codes, the raw spec document).
 *
 * Known differences are the tables in docs/reference-differences.md between the markers
 * `<!-- differential:begin -->` and `<!-- differential:end -->`: one row per difference, keyed by
 * operation (`<api>.<operationId>`), case and path (`*` matches any run of characters; the most
 * specific row wins), with its category (`defect`, `shape`, `kept`, `nondeterministic`) and reason.
 */
import { readFileSync } from 'node:fs';
import { type ApiName, type OperationDef, apiBasePath, operations } from '@ziti/contracts';
import type { HttpRequest, HttpResponse } from './http.ts';
import type { SpecValidator } from './spec-validator.ts';

// ---------------------------------------------------------------------------------------------
// Steps

export type Vars = Map<string, unknown>;
/** A value, or a function of the controller's variables that makes it (for per-controller inputs). */
export type Dyn<T> = T | ((vars: Vars) => T | Promise<T>);
/** A JSON body as written in the table. */
export type Body = Record<string, unknown> | unknown[] | string | number | boolean | null;

export interface Step {
  /** `<api>.<operationId>`, resolved from `api`, `method` and `path`. */
  op: string;
  api: ApiName;
  method: string;
  /** Concrete path under the API base, with `{var}` placeholders. */
  path: string;
  case: string;
  /** Query parameters (values with placeholders); an array repeats the parameter. */
  query?: Record<string, string | string[]>;
  /** The session: a variable holding a token (default `admin`), or `none`. */
  as?: string;
  body?: Body | ((vars: Vars) => unknown);
  /** A body sent as is (with `contentType`), e.g. a PEM CSR or a broken JSON text. */
  raw?: Dyn<string>;
  contentType?: string;
  headers?: Dyn<Record<string, string>>;
  /** Mutual TLS: a variable holding `{ cert, key }` PEMs. */
  cert?: string;
  /** Variables to keep from each controller's answer: a dotted path into the JSON, or a function. */
  save?: Record<string, string | ((res: HttpResponse, vars: Vars) => unknown)>;
  /** The statuses the reference must answer for the step to mean what it says (checked, not compared). */
  expect?: number | number[];
  /** What to compare: everything (default), or the status and media type only. */
  compare?: 'full' | 'status';
  /** The answer is a list whose order is meaningful even without `sort` (default: only with one). */
  ordered?: boolean;
  /** Sent again (at most 50 times, 100 ms apart) until the answer satisfies this: for work done in the background. */
  until?: (res: HttpResponse) => boolean;
  /** An event stream: the status and headers of a 200 are the answer (the stream is closed). */
  stream?: boolean;
  /** Generated from another step (generic cases); the one it derives from. */
  derivedFrom?: Step;
}

export type StepOptions = Omit<Step, 'op' | 'api' | 'method' | 'path' | 'case'>;

const templates = operations.map((op) => ({
  op,
  segments: op.path === '/' ? [] : op.path.slice(1).split('/'),
}));

/** The operation a method and path (under the API base, placeholders allowed) belong to. */
export function resolveOperation(api: ApiName, method: string, path: string): OperationDef | undefined {
  const bare = path.split('?')[0] ?? '';
  const parts = bare === '/' || bare === '' ? [] : bare.replace(/\/$/, '').slice(1).split('/');
  let best: { op: OperationDef; score: number } | undefined;
  for (const t of templates) {
    if (t.op.api !== api || t.op.method !== method || t.segments.length !== parts.length) continue;
    let score = 0;
    let ok = true;
    t.segments.forEach((seg, i) => {
      if (seg.startsWith('{')) return;
      if (seg === parts[i]) score++;
      else ok = false;
    });
    if (ok && (!best || score > best.score)) best = { op: t.op, score };
  }
  return best?.op;
}

/** One step: `spec` is `METHOD /path` on `api`. Throws when no operation has that method and path. */
export function makeStep(api: ApiName, spec: string, kase: string, options: StepOptions = {}): Step {
  const [method = '', path = ''] = spec.split(' ', 2);
  const op = resolveOperation(api, method, path);
  if (!op) throw new Error(`differential step '${spec}' (${api}): no operation has that method and path`);
  return { op: `${api}.${op.operationId}`, api, method, path, case: kase, ...options };
}

// ---------------------------------------------------------------------------------------------
// Placeholders

const PLACEHOLDER = /\{([A-Za-z][A-Za-z0-9_]*)\}/g;

/** Thrown for a placeholder no controller has a value for: a bug in the table. */
export class TableError extends Error {}

export interface Substitution {
  /** Variables the other controller had and this one lacked (an earlier step failed here). */
  missing: Set<string>;
  known: (name: string) => boolean;
}

function substituteString(s: string, vars: Vars, sub: Substitution): unknown {
  const whole = /^\{([A-Za-z][A-Za-z0-9_]*)\}$/.exec(s);
  if (whole) {
    const name = whole[1]!;
    if (vars.has(name)) return vars.get(name);
    if (!sub.known(name)) throw new TableError(`unknown variable {${name}}`);
    sub.missing.add(name);
    return `missing-${name}`;
  }
  return s.replace(PLACEHOLDER, (_m, name: string) => {
    if (vars.has(name)) return String(vars.get(name));
    if (!sub.known(name)) throw new TableError(`unknown variable {${name}}`);
    sub.missing.add(name);
    return `missing-${name}`;
  });
}

export function substitute(value: unknown, vars: Vars, sub: Substitution): unknown {
  if (typeof value === 'string') return substituteString(value, vars, sub);
  if (Array.isArray(value)) return value.map((v) => substitute(v, vars, sub));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = substitute(v, vars, sub);
    return out;
  }
  return value;
}

async function resolveDyn<T>(value: Dyn<T> | undefined, vars: Vars): Promise<T | undefined> {
  return typeof value === 'function' ? await (value as (v: Vars) => T | Promise<T>)(vars) : value;
}

/** A dotted path into a JSON value (`data.id`, `data.enrollment.ott.jwt`, `data.0.id`). */
export function pick(value: unknown, path: string): unknown {
  let cur = value;
  for (const key of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

// ---------------------------------------------------------------------------------------------
// Normalisation

/** Ids both controllers share by definition (ZITI-FACTS §7): never replaced. */
export const FIXED_IDS = new Set([
  'Default',
  'Router',
  'default',
  'OS',
  'PROCESS',
  'PROCESS_MULTI',
  'DOMAIN',
  'MAC',
  'MFA',
  'f2dd2df0-9c04-4b84-a91e-71437ac229f1',
  'cea49285-6c07-42cf-9f52-09a9b115c783',
  'g7cIWbcGg',
  'NH5p4FpGR',
  'host.v2',
  'edge-client',
  'edge-management',
  'all',
]);

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
const RFC3339_IN = /\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:?\d{2})?(?: [+-]\d{4} UTC)?/g;
const JWT = /^eyJ[\w-]+\.[\w-]+\.[\w-]*$/;
const HEX_FINGERPRINT = /^(?:[0-9a-f]{40}|[0-9a-f]{64}|[0-9A-F]{40}|[0-9A-F]{64})$/;
const LONG_BASE64 = /^[A-Za-z0-9+/=\r\n]{200,}$/;
const VERSION_KEYS = new Set(['version', 'revision', 'buildDate', 'runtimeVersion', 'goVersion']);
/** Keys whose string values are random secrets or tokens by nature. */
const RANDOM_KEYS = new Set(['requestId', 'verificationToken', 'secret', 'totpSecret']);
/** Arrays compared as sets (their order carries no meaning, or is a store's map order: `configTypes`). */
const SET_KEYS =
  /^(filterableFields|.*Roles|.*Ids|recoveryCodes|capabilities|configs|configTypes|permissions|services|edgeRouters)$/;
const ID_KEY = /^(id|.*Id|.*Ids)$/;
/** Maps keyed by ids (posture data by API session, hosting costs by service). */
const ID_KEYED_MAPS = /^(apiSessionPostureData|serviceHostingCosts|serviceHostingPrecedences)$/;
/** Path segments that are never ids (`./current-identity/authenticators`). */
const STATIC_SEGMENTS = new Set(operations.flatMap((o) => o.path.split('/').filter((s) => s && !s.startsWith('{'))));
/** Stands for a list item the other controller has and this one lacks (after pairing the items). */
export const NO_ITEM = '(no such item)';

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function kindOf(key: string, parent: Json | undefined, parentKey: string | undefined): string {
  if (key !== 'id') return key.replace(/Ids?$/, '') || 'id';
  const href = (parent?._links as Record<string, { href?: string }> | undefined)?.self?.href;
  const fromHref = typeof href === 'string' ? /^\.\/([^/]+)/.exec(href)?.[1] : undefined;
  const entity = typeof parent?.entity === 'string' ? parent.entity : undefined;
  return (fromHref ?? entity ?? parentKey ?? 'id').replace(/[^\w-]/g, '');
}

/** Whether a string found in an id position is a generated id worth replacing. */
function eligibleId(s: string): boolean {
  return s.length >= 5 && s.length <= 64 && /^[A-Za-z0-9._~-]+$/.test(s) && !FIXED_IDS.has(s);
}

/** The generated ids in one JSON value, each with its kind, in walk order (object keys sorted, `id` first). */
function idsIn(
  value: unknown,
  key = '',
  parent?: Json,
  parentKey?: string,
  out: [string, string][] = [],
): [string, string][] {
  if (typeof value === 'string') {
    if (ID_KEY.test(key)) out.push([value, kindOf(key, parent, parentKey)]);
    else if (value.startsWith('@') && /Roles$/.test(parentKey ?? '')) out.push([value.slice(1), 'role']);
    else if (key === 'href') {
      const m = /^\.\/([^/]+)\/([^/?]+)/.exec(value);
      if (m && !STATIC_SEGMENTS.has(m[2]!)) out.push([m[2]!, m[1]!]);
    }
  } else if (Array.isArray(value)) {
    for (const v of value) idsIn(v, key, parent, key, out);
  } else if (isObj(value)) {
    if (typeof value.id === 'string') idsIn(value.id, 'id', value, key, out);
    for (const k of Object.keys(value).sort()) {
      if (ID_KEYED_MAPS.test(key)) out.push([k, key]);
      if (k !== 'id') idsIn(value[k], k, value, key, out);
    }
  }
  return out.filter(([raw]) => eligibleId(raw));
}

/** One controller's names for the values that differ between installations. */
export class Normaliser {
  private readonly names = new Map<string, string>();
  private readonly used = new Set<string>();
  private pattern: RegExp | undefined;

  /** `addresses`: this controller's own host:port strings and what to call them. */
  constructor(private readonly addresses: [string, string][]) {}

  /** Replaces `raw` by `<name>` from now on (a saved variable). */
  name(raw: unknown, name: string): void {
    if (typeof raw !== 'string' || raw.length < 5 || FIXED_IDS.has(raw) || this.names.has(raw)) return;
    if (/\s/.test(raw) && raw.length < 12) return;
    this.assign(raw, `<${name}>`);
  }

  assign(raw: string, placeholder: string): void {
    this.names.set(raw, placeholder);
    this.used.add(placeholder);
    this.pattern = undefined;
  }

  placeholderOf(raw: string): string | undefined {
    return this.names.get(raw);
  }

  isUsed(placeholder: string): boolean {
    return this.used.has(placeholder);
  }

  private known(): RegExp | undefined {
    if (this.pattern) return this.pattern;
    if (this.names.size === 0) return undefined;
    const keys = [...this.names.keys()].sort((a, b) => b.length - a.length);
    this.pattern = new RegExp(keys.map((k) => k.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
    return this.pattern;
  }

  /** One string, normalised. */
  string(s: string, key = ''): string {
    if (s === NO_ITEM) return s;
    if (RANDOM_KEYS.has(key) && s !== '') return `<${key}>`;
    if (VERSION_KEYS.has(key) && s !== '') return '<version>';
    if (s.includes('-----BEGIN')) return '<pem>';
    if (JWT.test(s)) return '<jwt>';
    let out = s;
    for (const [address, label] of this.addresses) out = out.split(address).join(label);
    const known = this.known();
    if (known) out = out.replace(known, (m) => this.names.get(m) ?? m);
    out = out.replace(UUID, (m) => (FIXED_IDS.has(m) ? m : '<uuid>'));
    out = out.replace(RFC3339_IN, (m) => (m.startsWith('0001-01-01') ? '<zero-time>' : '<time>'));
    if (HEX_FINGERPRINT.test(out)) return '<fingerprint>';
    if (LONG_BASE64.test(out)) return '<base64>';
    if (key === 'provisioningUrl') out = out.replace(/secret=[A-Z2-7]+/, 'secret=<secret>');
    return out;
  }

  /** A JSON value, normalised (its ids named beforehand); set-like arrays sorted. */
  value(v: unknown, key = ''): unknown {
    if (typeof v === 'string') return this.string(v, key);
    if (Array.isArray(v)) {
      const items = v.map((x) => this.value(x, key));
      if (key === 'recoveryCodes') return items.map(() => '<recovery-code>');
      return SET_KEYS.test(key) && items.every((i) => typeof i !== 'object' || i === null) ? [...items].sort() : items;
    }
    if (isObj(v)) {
      const out: Json = {};
      for (const k of Object.keys(v).sort()) out[ID_KEYED_MAPS.test(key) ? this.string(k) : k] = this.value(v[k], k);
      return out;
    }
    return v;
  }

  /** How a list item is recognised on both sides: its name, its id's name, or its content with ids masked. */
  itemKey(item: unknown): string {
    if (isObj(item)) {
      // Normalised: a name holding an id (`edge-router-<id>-system`) names the same item on both sides.
      if (typeof item.name === 'string') return `name:${this.string(item.name)}`;
      const id = typeof item.id === 'string' ? this.names.get(item.id) : undefined;
      if (id) return `id:${id}`;
      if (typeof item.role === 'string') return `role:${this.string(item.role)}`;
    }
    const mask = (x: unknown, key = ''): unknown => {
      if (typeof x === 'string') {
        if (ID_KEY.test(key) && !FIXED_IDS.has(x) && !this.names.has(x)) return '<id>';
        return this.string(x, key).replace(/\.\/([^/]+)\/[^<][^/?]*/g, './$1/<id>');
      }
      if (Array.isArray(x)) return x.map((y) => mask(y, key));
      if (isObj(x)) {
        const out: Json = {};
        for (const k of Object.keys(x).sort()) out[k] = mask(x[k], k);
        return out;
      }
      return x;
    };
    return `json:${JSON.stringify(mask(item))}`;
  }
}

/**
 * Pairs the items of the two controllers' lists (by name, by named id, by content; the rest in
 * that order), so that both are compared item by item; a missing item becomes `NO_ITEM`. The
 * top-level `data` of a list keeps its order when the request fixed one.
 */
function align(a: unknown, b: unknown, na: Normaliser, nb: Normaliser, ordered: boolean, key = ''): [unknown, unknown] {
  if (Array.isArray(a) && Array.isArray(b)) {
    if (![...a, ...b].some(isObj)) return [a, b];
    // A sorted list keeps the reference's order (ours follows it); the order itself is compared apart.
    const byKey = (p: { k: string }, q: { k: string }) => (p.k < q.k ? -1 : p.k > q.k ? 1 : 0);
    const ka = a.map((x) => ({ x, k: na.itemKey(x) }));
    const kb = b.map((x) => ({ x, k: nb.itemKey(x) }));
    if (!(ordered && key === 'data')) {
      ka.sort(byKey);
      kb.sort(byKey);
    }
    const pairs: [unknown, unknown][] = [];
    const restA: { x: unknown; k: string }[] = [];
    const restB = [...kb];
    for (const p of ka) {
      const i = restB.findIndex((q) => q.k === p.k);
      if (i >= 0) pairs.push([p.x, restB.splice(i, 1)[0]!.x]);
      else restA.push(p);
    }
    // Unnamed items left on both sides are paired in order (the same items, differing in content);
    // a named item left over is one the other side does not have.
    const unnamed = (k: string) => k.startsWith('json:');
    const leftA = restA.filter((p) => unnamed(p.k)).sort(byKey);
    const leftB = restB.filter((q) => unnamed(q.k)).sort(byKey);
    while (leftA.length && leftB.length) pairs.push([leftA.shift()!.x, leftB.shift()!.x]);
    for (const p of [...restA.filter((r) => !unnamed(r.k)), ...leftA]) pairs.push([p.x, NO_ITEM]);
    for (const q of [...restB.filter((r) => !unnamed(r.k)), ...leftB]) pairs.push([NO_ITEM, q.x]);
    const aligned = pairs.map(([x, y]) => align(x, y, na, nb, false, key));
    return [aligned.map((p) => p[0]), aligned.map((p) => p[1])];
  }
  if (isObj(a) && isObj(b)) {
    const oa: Json = {};
    const ob: Json = {};
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const [x, y] = align(a[k], b[k], na, nb, ordered, k);
      if (k in a) oa[k] = x;
      if (k in b) ob[k] = y;
    }
    return [oa, ob];
  }
  return [a, b];
}

/** Names the ids of both answers together: an id at the same place on both sides gets the same name. */
export class IdNamer {
  private readonly counters = new Map<string, number>();

  constructor(
    private readonly ref: Normaliser,
    private readonly ours: Normaliser,
  ) {}

  private fresh(kind: string): string {
    const n = (this.counters.get(kind) ?? 0) + 1;
    this.counters.set(kind, n);
    return `<${kind}#${n}>`;
  }

  /** `a` from the reference and `b` from ours stand at the same place. */
  private pair(a: string | undefined, b: string | undefined, kind: string): void {
    const pa = a === undefined ? undefined : this.ref.placeholderOf(a);
    const pb = b === undefined ? undefined : this.ours.placeholderOf(b);
    if (a !== undefined && b !== undefined && !pa && !pb) {
      const p = this.fresh(kind);
      this.ref.assign(a, p);
      this.ours.assign(b, p);
    } else if (a !== undefined && !pa) {
      this.ref.assign(a, pb && !this.ref.isUsed(pb) ? pb : this.fresh(kind));
    } else if (b !== undefined && !pb) {
      this.ours.assign(b, pa && !this.ours.isUsed(pa) ? pa : this.fresh(kind));
    }
  }

  /** Walks both (aligned) answers in step. */
  learn(a: unknown, b: unknown): void {
    // The same place is the same path in the aligned answers; what has no counterpart is named alone.
    const pb = positions(b);
    for (const [path, [raw, kind]] of positions(a)) {
      const other = pb.get(path);
      if (other !== undefined) this.pair(raw, other[0], kind);
    }
    for (const [raw, kind] of idsIn(a)) this.pair(raw, undefined, kind);
    for (const [raw, kind] of idsIn(b)) this.pair(undefined, raw, kind);
  }
}

/** Each generated id of a value by where it stands (`data.3.identity.id`, `data.0.identityRoles.@1`). */
function positions(value: unknown): Map<string, [string, string]> {
  const out = new Map<string, [string, string]>();
  const walk = (v: unknown, path: string, key: string, parent: Json | undefined, parentKey: string | undefined) => {
    if (typeof v === 'string') {
      for (const [raw, kind] of idsIn(v, key, parent, parentKey)) if (!out.has(path)) out.set(path, [raw, kind]);
    } else if (Array.isArray(v)) {
      v.forEach((x, i) => walk(x, `${path}.${i}`, key, parent, key));
    } else if (isObj(v)) {
      for (const k of Object.keys(v)) walk(v[k], `${path}.${k}`, k, v, key);
    }
  };
  walk(value, '', '', undefined, undefined);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Controllers

export type Side = 'reference' | 'ours';

export interface Target {
  side: Side;
  send: (req: HttpRequest) => Promise<HttpResponse>;
  vars: Vars;
  norm: Normaliser;
}

/** One controller's answer to one step, before and after normalisation. */
export interface Answer {
  status: number;
  contentType: string;
  raw: HttpResponse | undefined;
  /** The body as JSON (also when sent under another media type), before normalisation. */
  json: unknown;
  /** Normalised body: JSON, or text for other media types. */
  body: unknown;
  /** The official spec's complaint about the answer, if any. */
  specError: string | undefined;
  /** A transport failure (no HTTP answer). */
  failure: string | undefined;
  missing: string[];
  /** (ours only) a sorted list whose common items come in another order than the reference's. */
  order?: { reference: string[]; ours: string[] };
}

function mediaType(res: HttpResponse | undefined): string {
  const ct = res?.headers['content-type'];
  return String(Array.isArray(ct) ? ct[0] : (ct ?? ''))
    .split(';')[0]!
    .trim()
    .toLowerCase();
}

/** The body as JSON: parsed by the client, or a JSON text sent under another media type. */
export function jsonOf(res: HttpResponse | undefined): unknown {
  if (!res) return undefined;
  if (res.json !== undefined) return res.json;
  if (!/^\s*[[{]/.test(res.text)) return undefined;
  try {
    return JSON.parse(res.text);
  } catch {
    return undefined;
  }
}

function queryString(query: Record<string, unknown> | undefined): string {
  if (!query) return '';
  const parts: string[] = [];
  for (const [k, v] of Object.entries(query)) {
    for (const one of Array.isArray(v) ? v : [v])
      parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(String(one))}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

export function isOrdered(step: Step): boolean {
  if (step.ordered) return true;
  const q = step.query ?? {};
  return q.sort !== undefined || /\bsort\s+by\b/i.test(String(q.filter ?? ''));
}

/** Sends one step to one controller and keeps the variables it saves (normalisation comes after, jointly). */
export async function sendStep(
  step: Step,
  target: Target,
  sub: (side: Side) => Substitution,
  validator: SpecValidator,
): Promise<Answer> {
  const s = sub(target.side);
  const vars = target.vars;
  const path = substitute(step.path, vars, s) as string;
  const query = substitute(step.query, vars, s) as Record<string, unknown> | undefined;
  const fullPath = `${apiBasePath[step.api]}${path === '/' ? '' : path}${queryString(query)}`;
  const headers = { ...((substitute(await resolveDyn(step.headers, vars), vars, s) ?? {}) as Record<string, string>) };
  const as = step.as ?? 'admin';
  if (as !== 'none') {
    const token = vars.get(as);
    if (typeof token === 'string') headers['zt-session'] = token;
    else if (!s.known(as)) throw new TableError(`unknown session variable ${as}`);
    else s.missing.add(as);
  }
  const req: HttpRequest = { method: step.method, path: fullPath, headers };
  const body = substitute(await resolveDyn(step.body, vars), vars, s);
  const raw = substitute(await resolveDyn(step.raw, vars), vars, s);
  if (raw !== undefined) {
    req.rawBody = String(raw);
    headers['content-type'] = step.contentType ?? 'application/json';
  } else if (body !== undefined) {
    req.body = body;
    if (step.contentType) headers['content-type'] = step.contentType;
  }
  if (step.cert) {
    const pair = vars.get(step.cert) as { cert: string; key: string } | undefined;
    if (pair) Object.assign(req, { cert: pair.cert, key: pair.key });
    else if (!s.known(step.cert)) throw new TableError(`unknown certificate variable ${step.cert}`);
    else s.missing.add(step.cert);
  }
  if (step.stream) req.streamHead = true;
  const answer: Answer = {
    status: 0,
    contentType: '',
    raw: undefined,
    json: undefined,
    body: undefined,
    specError: undefined,
    failure: undefined,
    missing: [...s.missing],
  };
  let res: HttpResponse;
  try {
    res = await target.send(req);
    for (let attempt = 1; step.until && !step.until(res) && attempt < 50; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      res = await target.send(req);
    }
  } catch (err) {
    return { ...answer, failure: (err as Error).message };
  }
  for (const [name, from] of Object.entries(step.save ?? {})) {
    const value = await (typeof from === 'function' ? from(res, vars) : pick(jsonOf(res), from));
    if (value === undefined || value === null) continue;
    vars.set(name, value);
    target.norm.name(value, name);
  }
  const contentType = mediaType(res);
  let specError: string | undefined;
  try {
    validator.validate(step.api, step.method, fullPath, res.status, res.json ?? (res.text || undefined), contentType);
  } catch (err) {
    specError = (err as Error).message.split('\n').slice(0, 6).join(' | ');
  }
  return { ...answer, status: res.status, contentType, raw: res, json: jsonOf(res), specError };
}

/** For a sorted list: the items both answers hold, in each answer's order, when those orders differ. */
function orderOf(step: Step, ref: Answer, ours: Answer, targets: { reference: Target; ours: Target }) {
  const data = (x: Answer) => (x.json as { data?: unknown } | undefined)?.data;
  const a = data(ref);
  const b = data(ours);
  if (!isOrdered(step) || !Array.isArray(a) || !Array.isArray(b)) return undefined;
  const ka = a.map((x) => targets.reference.norm.itemKey(x));
  const kb = b.map((x) => targets.ours.norm.itemKey(x));
  const common = (xs: string[], ys: string[]) => xs.filter((k) => ys.includes(k));
  const [oa, ob] = [common(ka, kb), common(kb, ka)];
  return oa.join('\n') === ob.join('\n') ? undefined : { reference: oa, ours: ob };
}

/** Normalises both answers of a step together (pairing list items and naming ids alike). */
export function normaliseAnswers(
  step: Step,
  ref: Answer,
  ours: Answer,
  targets: { reference: Target; ours: Target },
  namer: IdNamer,
): void {
  const order = orderOf(step, ref, ours, targets);
  if (order) ours.order = order;
  const [a, b] = align(ref.json, ours.json, targets.reference.norm, targets.ours.norm, isOrdered(step));
  namer.learn(a, b);
  const text = (x: Answer, n: Normaliser) => (x.raw && x.raw.text !== '' ? n.string(x.raw.text) : undefined);
  ref.body = a !== undefined ? targets.reference.norm.value(a) : text(ref, targets.reference.norm);
  ours.body = b !== undefined ? targets.ours.norm.value(b) : text(ours, targets.ours.norm);
}

// ---------------------------------------------------------------------------------------------
// Comparison

export interface Difference {
  op: string;
  case: string;
  path: string;
  reference: unknown;
  ours: unknown;
  /** How many positions of the answer differ under this path. */
  count: number;
}

function kind(v: unknown): string {
  if (v === undefined) return 'absent';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

const clip = (v: unknown, max = 300): unknown => {
  if (v === undefined) return '(absent)';
  const text = JSON.stringify(v) ?? String(v);
  return text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : v;
};

function errorCode(body: unknown): string {
  const code = (body as { error?: { code?: unknown } } | undefined)?.error?.code;
  return typeof code === 'string' ? ` ${code}` : '';
}

/** The differences between two normalised answers (keyed by collapsed JSON path). */
export function compareAnswers(step: Step, ref: Answer, ours: Answer): Difference[] {
  const out = new Map<string, Difference>();
  const add = (path: string, reference: unknown, oursValue: unknown) => {
    const had = out.get(path);
    if (had) had.count++;
    else
      out.set(path, {
        op: step.op,
        case: step.case,
        path,
        reference: clip(reference),
        ours: clip(oursValue),
        count: 1,
      });
  };
  if (ref.failure || ours.failure) {
    if (ref.failure !== ours.failure) add('<transport>', ref.failure ?? 'answered', ours.failure ?? 'answered');
    return [...out.values()];
  }
  if (ref.status !== ours.status) {
    add('<status>', `${ref.status}${errorCode(ref.body)}`, `${ours.status}${errorCode(ours.body)}`);
    return [...out.values()];
  }
  if (ref.contentType !== ours.contentType) add('<content-type>', ref.contentType, ours.contentType);
  if (step.compare !== 'status') {
    if (typeof ref.body === 'string' || typeof ours.body === 'string') {
      if (ref.body !== ours.body) add('<body>', ref.body, ours.body);
    } else {
      walkDiff(ref.body, ours.body, '', '', add);
    }
  }
  if (ours.order && step.compare !== 'status')
    add('data (order)', ours.order.reference.slice(0, 12), ours.order.ours.slice(0, 12));
  if (ours.specError && !ref.specError) add('<spec>', 'conforms', ours.specError);
  return [...out.values()];
}

function walkDiff(
  a: unknown,
  b: unknown,
  path: string,
  key: string,
  add: (p: string, a: unknown, b: unknown) => void,
): void {
  const ka = kind(a);
  const kb = kind(b);
  const here = path || '(root)';
  if (a === NO_ITEM || b === NO_ITEM) {
    const summary = (v: unknown) => (isObj(v) ? (v.name ?? v.id ?? v) : v);
    add(here, summary(a), summary(b));
    return;
  }
  if (ka !== kb) {
    add(here, a, b);
    return;
  }
  if (ka === 'array') {
    const x = a as unknown[];
    const y = b as unknown[];
    if (SET_KEYS.test(key) && [...x, ...y].every((v) => typeof v !== 'object' || v === null)) {
      // A set: what only one side has.
      const onlyA = x.filter((v) => !y.includes(v));
      const onlyB = y.filter((v) => !x.includes(v));
      if (onlyA.length || onlyB.length) add(here, { only: onlyA }, { only: onlyB });
      return;
    }
    if (x.length !== y.length) {
      const show = (v: unknown[]) => (v.length === 0 || v.length > 3 ? `${v.length} items` : v);
      add(`${here} (length)`, show(x), show(y));
      return;
    }
    x.forEach((item, i) => walkDiff(item, y[i], `${path}[]`, key, add));
    return;
  }
  if (ka === 'object') {
    const x = a as Json;
    const y = b as Json;
    for (const k of [...new Set([...Object.keys(x), ...Object.keys(y)])].sort()) {
      walkDiff(x[k], y[k], path ? `${path}.${k}` : k, k, add);
    }
    return;
  }
  if (a !== b) add(here, a, b);
}

// ---------------------------------------------------------------------------------------------
// The list of known differences

export const CATEGORIES = ['defect', 'shape', 'kept', 'nondeterministic'] as const;
export type Category = (typeof CATEGORIES)[number];

export interface KnownDifference {
  op: string;
  case: string;
  path: string;
  category: Category;
  reason: string;
  line: number;
  matcher: (d: Pick<Difference, 'op' | 'case' | 'path'>) => boolean;
}

function glob(pattern: string): RegExp {
  return new RegExp(
    `^${pattern
      .split('*')
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );
}

const unquote = (cell: string) =>
  cell
    .trim()
    .replace(/^`(.*)`$/, '$1')
    .replace(/\\\|/g, '|');

/**
 * Reads the rows between `<!-- differential:begin -->` and `<!-- differential:end -->` (any number
 * of tables, headings between them), most specific first: a difference is the first row it matches.
 */
export function loadKnownDifferences(markdownPath: string): KnownDifference[] {
  const text = readFileSync(markdownPath, 'utf8');
  const lines = text.split('\n');
  const begin = lines.findIndex((l) => l.includes('<!-- differential:begin -->'));
  const end = lines.findIndex((l) => l.includes('<!-- differential:end -->'));
  if (begin < 0 || end < begin) throw new Error(`${markdownPath}: no <!-- differential:begin/end --> section`);
  const rows: KnownDifference[] = [];
  for (let i = begin + 1; i < end; i++) {
    const line = lines[i]!.trim();
    if (!line.startsWith('|') || /^\|\s*-/.test(line) || /^\|\s*operation\s*\|/.test(line)) continue;
    const cells = line
      .slice(1, line.endsWith('|') ? -1 : undefined)
      .split(/(?<!\\)\|/)
      .map(unquote);
    if (cells.length < 5)
      throw new Error(`${markdownPath}:${i + 1}: a row needs 5 cells (operation, case, path, category, reason)`);
    const [op = '', kase = '', path = '', categoryCell = '', ...reason] = cells;
    const category = categoryCell.split(':')[0]!.trim() as Category;
    if (!CATEGORIES.includes(category)) throw new Error(`${markdownPath}:${i + 1}: unknown category '${categoryCell}'`);
    const [o, c, p] = [glob(op), glob(kase), glob(path)];
    rows.push({
      op,
      case: kase,
      path,
      category,
      reason: [categoryCell.includes(':') ? categoryCell.slice(categoryCell.indexOf(':') + 1).trim() : '', ...reason]
        .filter(Boolean)
        .join(' — '),
      line: i + 1,
      matcher: (d) => o.test(d.op) && c.test(d.case) && p.test(d.path),
    });
  }
  // The most specific row first: fewest wildcards (in operation, then case, then path), then the
  // longest literal text; ties keep the order.
  const stars = (x: string) => x.split('*').length - 1;
  const specificity = (k: KnownDifference) =>
    (k.op === '*' ? 1000 : 0) + stars(k.op) * 100 + (k.case === '*' ? 50 : 0) + stars(k.case) * 10 + stars(k.path);
  const literal = (k: KnownDifference) => `${k.op}${k.case}${k.path}`.replace(/\*/g, '').length;
  return rows
    .map((row, i) => ({ row, i }))
    .sort((a, b) => specificity(a.row) - specificity(b.row) || literal(b.row) - literal(a.row) || a.i - b.i)
    .map((x) => x.row);
}

// ---------------------------------------------------------------------------------------------
// Running a sequence

export interface StepResult {
  step: Step;
  reference: Answer;
  ours: Answer;
  differences: Difference[];
  /** The reference did not answer as the table expects: the step does not test what it says. */
  problem: string | undefined;
}

function isPartialPage(json: unknown): boolean {
  const body = json as { data?: unknown; meta?: { pagination?: { totalCount?: number } } } | undefined;
  const total = body?.meta?.pagination?.totalCount;
  return Array.isArray(body?.data) && body.data.length > 1 && typeof total === 'number' && total > body.data.length;
}

/** Every variable name the steps save (plus the seeds): a placeholder outside it is a typo. */
export function declaredVariables(steps: readonly Step[], seeds: Iterable<string>): Set<string> {
  const names = new Set(seeds);
  for (const s of steps) for (const name of Object.keys(s.save ?? {})) names.add(name);
  return names;
}

/** Sends each step to both controllers (at once), in order, and compares the answers. */
export async function runSteps(
  steps: readonly Step[],
  targets: { reference: Target; ours: Target },
  validator: SpecValidator,
  declared: Set<string>,
  namer: IdNamer,
): Promise<StepResult[]> {
  const results: StepResult[] = [];
  for (const step of steps) {
    const sub = (side: Side): Substitution => {
      const other = side === 'reference' ? targets.ours : targets.reference;
      return { missing: new Set(), known: (name) => other.vars.has(name) || declared.has(name) };
    };
    const [reference, ours] = await Promise.all([
      sendStep(step, targets.reference, sub, validator),
      sendStep(step, targets.ours, sub, validator),
    ]);
    normaliseAnswers(step, reference, ours, targets, namer);
    const expected = step.expect === undefined ? undefined : [step.expect].flat();
    let problem: string | undefined;
    if (reference.failure) problem = `the reference did not answer: ${reference.failure}`;
    else if (expected && !expected.includes(reference.status)) {
      problem = `the reference answered ${reference.status} (the table expects ${expected.join('/')}): ${(reference.raw?.text ?? '').slice(0, 300)}`;
    } else if (reference.missing.length > 0) {
      problem = `the reference lacks ${reference.missing.join(', ')} (an earlier step failed there)`;
    } else if (!isOrdered(step) && isPartialPage(reference.json)) {
      problem =
        'an unsorted page short of the whole list: which items it holds is random on the reference (add a sort)';
    }
    results.push({ step, reference, ours, differences: compareAnswers(step, reference, ours), problem });
  }
  return results;
}

// ---------------------------------------------------------------------------------------------
// The report

export interface ClassifiedDifference extends Difference {
  owner: string;
  known: KnownDifference | undefined;
}

export interface OperationRow {
  op: string;
  owner: string;
  cases: number;
  /** Cases the reference answered with a 2xx. */
  successes: number;
  differences: number;
  unlisted: number;
}

export interface Report {
  rows: OperationRow[];
  differences: ClassifiedDifference[];
  unlisted: ClassifiedDifference[];
  /** Listed rows no difference matched (fixed since, or mistyped). */
  stale: KnownDifference[];
  /** Operations of the table no step exercised. */
  unexercised: string[];
  /** Operations without a hand-written step (only generic cases). */
  withoutTemplate: string[];
  problems: { op: string; case: string; problem: string }[];
  byCategory: Record<string, number>;
  cases: number;
}

export function buildReport(results: readonly StepResult[], known: readonly KnownDifference[]): Report {
  const ownerOf = new Map(operations.map((o) => [`${o.api}.${o.operationId}`, o.owner as string]));
  const rows = new Map<string, OperationRow>();
  for (const o of operations) {
    const key = `${o.api}.${o.operationId}`;
    rows.set(key, { op: key, owner: o.owner, cases: 0, successes: 0, differences: 0, unlisted: 0 });
  }
  const differences: ClassifiedDifference[] = [];
  const used = new Set<KnownDifference>();
  const templated = new Set<string>();
  const problems: Report['problems'] = [];
  for (const r of results) {
    const row = rows.get(r.step.op)!;
    row.cases++;
    if (r.reference.status >= 200 && r.reference.status < 300) row.successes++;
    if (!r.step.derivedFrom) templated.add(r.step.op);
    if (r.problem) problems.push({ op: r.step.op, case: r.step.case, problem: r.problem });
    for (const d of r.differences) {
      const match = known.find((k) => k.matcher(d));
      if (match) used.add(match);
      differences.push({ ...d, owner: ownerOf.get(d.op) ?? '?', known: match });
      row.differences++;
      if (!match) row.unlisted++;
    }
  }
  const byCategory: Record<string, number> = {};
  for (const d of differences) {
    const category = d.known?.category ?? 'unlisted';
    byCategory[category] = (byCategory[category] ?? 0) + 1;
  }
  return {
    rows: [...rows.values()],
    differences,
    unlisted: differences.filter((d) => !d.known),
    stale: known.filter((k) => !used.has(k)),
    unexercised: [...rows.values()].filter((r) => r.cases === 0).map((r) => r.op),
    withoutTemplate: [...rows.keys()].filter((k) => !templated.has(k)),
    problems,
    byCategory,
    cases: results.length,
  };
}

/** One row per operation (operation, cases, differences), then the summary line. */
export function formatReport(report: Report, seconds: number): string {
  const width = Math.max(...report.rows.map((r) => r.op.length));
  const lines = [
    `${'operation'.padEnd(width)}  ${'owner'.padEnd(14)}  cases  2xx  differences (unlisted)`,
    ...report.rows.map(
      (r) =>
        `${r.op.padEnd(width)}  ${r.owner.padEnd(14)}  ${String(r.cases).padStart(5)}  ${String(r.successes).padStart(3)}  ${String(r.differences).padStart(5)}${r.unlisted ? ` (${r.unlisted} unlisted)` : ''}`,
    ),
  ];
  const exercised = report.rows.filter((r) => r.cases > 0).length;
  const happy = report.rows.filter((r) => r.successes > 0).length;
  const categories = Object.entries(report.byCategory)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  lines.push(
    '',
    `differential: ${exercised}/${report.rows.length} operations exercised (${happy} with a 2xx answer from the reference), ` +
      `${report.cases} cases, ${report.differences.length} differences (${categories || 'none'}), ` +
      `${report.stale.length} listed rows unmatched, ${seconds.toFixed(0)} s`,
  );
  return lines.join('\n');
}
