import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { ApiName } from '../src/operation.ts';

/** The official specs and operations.tsv beside the repository (read-only reference material). */
const sharedDir = new URL('../../../../shared/', import.meta.url);

export interface SpecOperation {
  api: ApiName;
  method: string;
  path: string;
  operationId: string | undefined;
  tags: string[];
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- swagger documents are untyped YAML
export type SpecDocument = Record<string, any>;

const docs = new Map<ApiName, SpecDocument>();

export function officialSpec(api: ApiName): SpecDocument {
  let doc = docs.get(api);
  if (!doc) {
    doc = parse(readFileSync(new URL(`openapi/${api}.yml`, sharedDir), 'utf8')) as SpecDocument;
    docs.set(api, doc);
  }
  return doc;
}

export function specOperations(api: ApiName): SpecOperation[] {
  const out: SpecOperation[] = [];
  for (const [path, item] of Object.entries<SpecDocument>(officialSpec(api).paths)) {
    for (const [method, op] of Object.entries<SpecDocument>(item)) {
      if (method === 'parameters') continue;
      out.push({ api, method: method.toUpperCase(), path, operationId: op.operationId, tags: op.tags ?? [] });
    }
  }
  return out;
}

export interface TsvRow {
  api: ApiName;
  method: string;
  path: string;
  operationId: string;
  tag: string;
  owner: string;
  access: string;
  mfaPendingOk: string;
}

export function operationsTsv(): TsvRow[] {
  return readFileSync(new URL('operations.tsv', sharedDir), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .slice(1)
    .map((line) => {
      const [api, method, path, operationId, tag, owner, access, mfaPendingOk] = line.split('\t') as string[];
      return { api, method, path, operationId, tag, owner, access, mfaPendingOk } as TsvRow;
    });
}
