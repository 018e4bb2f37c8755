/**
 * Semantic versions and version ranges as OS posture checks read them (the reference uses
 * blang/semver v3): a reported OS version must be a full `MAJOR.MINOR.PATCH[-pre][+build]`; a check's
 * version entry is a range of comparators (`>=10.0.0 <11.0.0 || >12.0.0`, `=`, `==`, `!=`, `!`,
 * `>`, `>=`, `<`, `<=`, none for equality, a space allowed after the operator) whose versions are full
 * versions or wildcards `1.x` / `1.2.x`.
 */

export interface SemVer {
  major: number;
  minor: number;
  patch: number;
  pre: (string | number)[];
}

const numeric = /^(0|[1-9]\d*)$/;
const identifier = /^[0-9A-Za-z-]+$/;

/** A strict semantic version, or undefined. */
export function parseSemVer(text: string): SemVer | undefined {
  const plus = text.indexOf('+');
  const main = plus >= 0 ? text.slice(0, plus) : text;
  if (
    plus >= 0 &&
    !text
      .slice(plus + 1)
      .split('.')
      .every((p) => identifier.test(p))
  )
    return undefined;
  const dash = main.indexOf('-');
  const core = dash >= 0 ? main.slice(0, dash) : main;
  const parts = core.split('.');
  if (parts.length !== 3 || !parts.every((p) => numeric.test(p))) return undefined;
  const pre: (string | number)[] = [];
  if (dash >= 0) {
    for (const p of main.slice(dash + 1).split('.')) {
      if (!identifier.test(p)) return undefined;
      if (/^\d+$/.test(p)) {
        if (!numeric.test(p)) return undefined;
        pre.push(Number(p));
      } else pre.push(p);
    }
  }
  const [major, minor, patch] = parts.map(Number) as [number, number, number];
  return { major, minor, patch, pre };
}

export function compareSemVer(a: SemVer, b: SemVer): number {
  for (const k of ['major', 'minor', 'patch'] as const) if (a[k] !== b[k]) return a[k] < b[k] ? -1 : 1;
  if (a.pre.length === 0 || b.pre.length === 0) return b.pre.length - a.pre.length;
  for (let i = 0; i < Math.min(a.pre.length, b.pre.length); i++) {
    const x = a.pre[i]!;
    const y = b.pre[i]!;
    if (x === y) continue;
    if (typeof x === 'number' && typeof y === 'number') return x < y ? -1 : 1;
    if (typeof x === 'number') return -1;
    if (typeof y === 'number') return 1;
    return x < y ? -1 : 1;
  }
  return a.pre.length === b.pre.length ? 0 : a.pre.length < b.pre.length ? -1 : 1;
}

type Op = '=' | '!=' | '>' | '>=' | '<' | '<=';
interface Comparator {
  op: Op;
  version: SemVer;
}
/** OR of ANDs. */
export type SemVerRange = Comparator[][];

const ops: Record<string, Op> = {
  '': '=',
  '=': '=',
  '==': '=',
  '!': '!=',
  '!=': '!=',
  '>': '>',
  '>=': '>=',
  '<': '<',
  '<=': '<=',
};

/** Splits on spaces that do not follow an operator character, as the reference does. */
function splitAndTrim(s: string): string[] {
  const out: string[] = [];
  let last = 0;
  let lastChar = '';
  for (let i = 0; i < s.length; i++) {
    if (s[i] === ' ' && !['>', '<', '='].includes(lastChar)) {
      if (last < i - 1 || (last === i - 1 && s[last] !== ' ')) out.push(s.slice(last, i));
      last = i + 1;
    } else if (s[i] !== ' ') lastChar = s[i]!;
  }
  if (last < s.length) out.push(s.slice(last));
  return out.map((p) => p.replaceAll(' ', '')).filter((p) => p.length > 0);
}

/** `1.x` → 1.0.0 (next: 2.0.0); `1.2.x` → 1.2.0 (next: 1.3.0); a full version: itself, no next. */
function flatten(text: string): { version: SemVer; next?: SemVer } | undefined {
  const parts = text.split('.');
  if (parts.length === 3 && parts[2] === 'x' && numeric.test(parts[0]!) && numeric.test(parts[1]!)) {
    const [major, minor] = [Number(parts[0]), Number(parts[1])];
    return { version: { major, minor, patch: 0, pre: [] }, next: { major, minor: minor + 1, patch: 0, pre: [] } };
  }
  if (
    (parts.length === 2 || parts.length === 3) &&
    parts[1] === 'x' &&
    (parts.length === 2 || parts[2] === 'x') &&
    numeric.test(parts[0]!)
  ) {
    const major = Number(parts[0]);
    return { version: { major, minor: 0, patch: 0, pre: [] }, next: { major: major + 1, minor: 0, patch: 0, pre: [] } };
  }
  const version = parseSemVer(text);
  return version ? { version } : undefined;
}

function comparatorsOf(part: string): Comparator[] | undefined {
  const m = /^([<>=!]*)(.*)$/.exec(part)!;
  const op = ops[m[1]!];
  const flat = flatten(m[2]!);
  if (op === undefined || !flat) return undefined;
  if (!flat.next) return [{ op, version: flat.version }];
  const { version, next } = flat;
  switch (op) {
    case '=':
      return [
        { op: '>=', version },
        { op: '<', version: next },
      ];
    case '>':
      return [{ op: '>=', version: next }];
    case '<=':
      return [{ op: '<', version: next }];
    case '>=':
    case '<':
      return [{ op, version }];
    case '!=':
      return undefined; // handled by the caller (an OR)
  }
}

/** A version range, or undefined when the text is not one. */
export function parseSemVerRange(text: string): SemVerRange | undefined {
  const parts = splitAndTrim(text);
  if (parts.length === 0) return undefined;
  const out: SemVerRange = [];
  let current: Comparator[] = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (part === '||') {
      if (current.length === 0 || i === parts.length - 1) return undefined;
      out.push(current);
      current = [];
      continue;
    }
    const m = /^([<>=!]*)(.*)$/.exec(part)!;
    if (ops[m[1]!] === '!=' && m[2]!.includes('x')) {
      // `!=1.x`: below 1.0.0 or from 2.0.0 — an OR inside one AND part is not expressible: refuse it
      // only when combined; alone it is two alternatives.
      const flat = flatten(m[2]!);
      if (!flat?.next || parts.length !== 1) return undefined;
      return [[{ op: '<', version: flat.version }], [{ op: '>=', version: flat.next }]];
    }
    const comparators = comparatorsOf(part);
    if (!comparators) return undefined;
    current.push(...comparators);
  }
  out.push(current);
  return out;
}

function holds(c: Comparator, v: SemVer): boolean {
  const d = compareSemVer(v, c.version);
  switch (c.op) {
    case '=':
      return d === 0;
    case '!=':
      return d !== 0;
    case '>':
      return d > 0;
    case '>=':
      return d >= 0;
    case '<':
      return d < 0;
    case '<=':
      return d <= 0;
  }
}

export function inSemVerRange(range: SemVerRange, v: SemVer): boolean {
  return range.some((and) => and.every((c) => holds(c, v)));
}
