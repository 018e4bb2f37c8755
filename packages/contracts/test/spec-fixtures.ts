import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { ApiName } from '../src/operation.ts';

/** The official specs and operations.tsv beside the repository (read-only reference material). */
const sharedDir = new URL('../../../../shared/', import.meta.url);
/** This controller's extensions to the management API (under /extensions/ only) and their owners. */
const extensionsDir = new URL('../openapi/', import.meta.url);

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

let extensions: SpecDocument | undefined;

/** `management-extensions.yml`: the paths and definitions this controller adds to the management API. */
export function extensionsSpec(): SpecDocument {
  extensions ??= parse(readFileSync(new URL('management-extensions.yml', extensionsDir), 'utf8')) as SpecDocument;
  return extensions;
}

/** The contract this controller implements: the official spec, and for management its extensions. */
export function contractSpec(api: ApiName): SpecDocument {
  const official = officialSpec(api);
  if (api === 'client') return official;
  const ext = extensionsSpec();
  return {
    ...official,
    paths: { ...official.paths, ...ext.paths },
    definitions: { ...official.definitions, ...ext.definitions },
  };
}

/** Every operation of the contract (`official`: of the official spec alone). */
export function specOperations(api: ApiName, which: 'contract' | 'official' = 'contract'): SpecOperation[] {
  const out: SpecOperation[] = [];
  const doc = which === 'official' ? officialSpec(api) : contractSpec(api);
  for (const [path, item] of Object.entries<SpecDocument>(doc.paths)) {
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

/** operations.tsv, and the extensions' rows after it. */
export function operationsTsv(): TsvRow[] {
  return [tsvRows(new URL('operations.tsv', sharedDir)), tsvRows(new URL('extensions.tsv', extensionsDir))].flat();
}

function tsvRows(file: URL): TsvRow[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .slice(1)
    .map((line) => {
      const [api, method, path, operationId, tag, owner, access, mfaPendingOk] = line.split('\t') as string[];
      return { api, method, path, operationId, tag, owner, access, mfaPendingOk } as TsvRow;
    });
}
