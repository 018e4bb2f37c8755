import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { buildSwaggerDocument, type SwaggerDocument } from '../src/openapi.ts';
import type { ApiName } from '../src/operation.ts';
import { operations } from '../src/table.ts';
import { specOperations } from './spec-fixtures.ts';

const apis: ApiName[] = ['client', 'management'];

function refsIn(value: unknown, into: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) refsIn(v, into);
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && typeof v === 'string') into.push(v);
      else refsIn(v, into);
    }
  }
  return into;
}

function keysIn(value: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const v of value) keysIn(v, into);
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      into.add(k);
      keysIn(v, into);
    }
  }
  return into;
}

describe.each(apis)('the %s swagger document', (api) => {
  const doc: SwaggerDocument = JSON.parse(JSON.stringify(buildSwaggerDocument(api, { host: 'ctrl.example:1280' })));

  it('is Swagger 2.0 for this controller', () => {
    expect(doc.swagger).toBe('2.0');
    expect(doc.info.version).toBe('0.26.25');
    expect(doc.host).toBe('ctrl.example:1280');
    expect(doc.basePath).toBe(api === 'client' ? '/edge/client/v1' : '/edge/management/v1');
    expect(buildSwaggerDocument(api, { host: 'h', basePath: '/x' }).basePath).toBe('/x');
  });

  it('has every path and method of the official spec, with its operationId, and no others', () => {
    const official = specOperations(api);
    const ours = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, op]) => ({
        key: `${method.toUpperCase()} ${path}`,
        operationId: op.operationId,
      })),
    );
    expect(ours.map((o) => o.key).sort()).toEqual(official.map((o) => `${o.method} ${o.path}`).sort());
    for (const o of official) {
      const op = doc.paths[o.path]?.[o.method.toLowerCase()];
      expect(op?.operationId).toBe(o.operationId ?? 'deleteCurrentApiSession');
      expect(op?.tags).toEqual(o.tags);
    }
  });

  it('declares parameters, security and responses from the table', () => {
    const list = doc.paths[api === 'client' ? '/services' : '/identities']!.get!;
    expect(list.security).toEqual([{ ztSession: [] }]);
    const limit = list.parameters?.find((p) => p.name === 'limit');
    expect(limit).toMatchObject({ in: 'query', type: 'integer', required: false });
    expect(list.parameters?.find((p) => p.name === 'roleFilter')).toMatchObject({
      type: 'array',
      collectionFormat: 'multi',
    });
    expect(list.responses['200']?.schema).toMatchObject({
      properties: { data: { $ref: api === 'client' ? '#/definitions/serviceList' : '#/definitions/identityList' } },
    });
    expect(doc.paths['/version']!.get!.security).toEqual([]);
    for (const op of operations.filter((o) => o.api === api && o.body)) {
      const body = doc.paths[op.path]![op.method.toLowerCase()]!.parameters!.find((p) => p.in === 'body');
      expect(body?.name).toBe(op.bodyName);
      expect(body?.required).toBe(op.bodyRequired === true);
    }
  });

  it('resolves every $ref and uses only Swagger 2.0 schema constructs', () => {
    for (const ref of refsIn(doc)) {
      expect(ref.startsWith('#/definitions/'), ref).toBe(true);
      expect(doc.definitions[ref.slice('#/definitions/'.length)], ref).toBeDefined();
    }
    expect(Object.keys(doc.definitions).filter((name) => name.startsWith('__'))).toEqual([]);
    expect(doc.definitions.apiError).toMatchObject({ properties: { cause: { $ref: '#/definitions/apiErrorCause' } } });
    const keys = keysIn(doc.definitions);
    for (const unsupported of ['anyOf', 'oneOf', 'nullable', 'const', '$defs', '$schema']) {
      expect(keys.has(unsupported), unsupported).toBe(false);
    }
  });

  it('writes polymorphic definitions with a discriminator and allOf subtypes', () => {
    if (api === 'management') {
      expect(doc.definitions.postureCheckCreate).toMatchObject({
        discriminator: 'typeId',
        required: ['name', 'typeId'],
      });
      expect(doc.definitions.postureCheckDomainCreate).toMatchObject({
        allOf: [{ $ref: '#/definitions/postureCheckCreate' }, { required: ['domains'] }],
        'x-class': 'DOMAIN',
      });
    } else {
      expect(doc.definitions.postureResponseCreate).toMatchObject({ discriminator: 'typeId' });
    }
  });

  it('has definitions a JSON schema validator compiles and that accept real records', () => {
    const ajv = new Ajv({ strict: false, validateFormats: false });
    ajv.addSchema({ definitions: doc.definitions }, 'doc');
    const valid = ajv.getSchema('doc#/definitions/link');
    expect(valid?.({ href: './identities/1' })).toBe(true);
    expect(valid?.({})).toBe(false);
    for (const name of Object.keys(doc.definitions))
      expect(ajv.getSchema(`doc#/definitions/${name}`), name).toBeDefined();
  });
});
