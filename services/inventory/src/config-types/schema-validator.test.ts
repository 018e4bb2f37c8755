import { describe, expect, it } from 'vitest';
import { AjvSchemaValidator } from './ajv-schema-validator.adapter.ts';
import { builtinConfigTypes } from './builtin-config-types.domain.ts';

const validator = new AjvSchemaValidator();
const schemaOf = (name: string) => builtinConfigTypes.find((t) => t.name === name)!.schema;

describe('built-in config types (ZITI-FACTS §7.4)', () => {
  it('have the reference ids, names and $ids, and are valid schemas with an object root', () => {
    expect(builtinConfigTypes.map((t) => [t.id, t.name])).toEqual([
      ['f2dd2df0-9c04-4b84-a91e-71437ac229f1', 'ziti-tunneler-client.v1'],
      ['cea49285-6c07-42cf-9f52-09a9b115c783', 'ziti-tunneler-server.v1'],
      ['g7cIWbcGg', 'intercept.v1'],
      ['NH5p4FpGR', 'host.v1'],
      ['host.v2', 'host.v2'],
    ]);
    expect(schemaOf('host.v1').$id).toBe('http://ziti-edge.netfoundry.io/schemas/host.v1.schema.json');
    expect(schemaOf('intercept.v1').$id).toBe('http://edge.openziti.org/schemas/intercept.v1.config.json');
    for (const t of builtinConfigTypes) {
      expect(validator.schemaProblem(t.schema), t.name).toBeNull();
      expect(t.schema.type).toBe('object');
    }
  });

  it('ziti-tunneler-client.v1: hostname and a 16-bit port, nothing else', () => {
    const s = schemaOf('ziti-tunneler-client.v1');
    expect(validator.violation(s, { hostname: 'example.com', port: 80 })).toBeNull();
    expect(validator.violation(s, { hostname: 'example.com' })).toEqual({
      field: '(root)',
      reason: '(root) is invalid: (root): port is required',
      value: '{"hostname":"example.com"}',
    });
    expect(validator.violation(s, { hostname: 'x', port: 70000 })).toMatchObject({ field: 'port', value: '70000' });
    expect(validator.violation(s, { hostname: 'x', port: '80' })).toMatchObject({
      field: 'port',
      reason: 'port is invalid: port: Invalid type. Expected: integer, given: string',
    });
    expect(validator.violation(s, { hostname: 'x', port: 1, extra: true })).toMatchObject({
      field: '(root)',
      reason: '(root) is invalid: (root): Additional property extra is not allowed',
    });
  });

  it('ziti-tunneler-server.v1: optional protocol and health checks', () => {
    const s = schemaOf('ziti-tunneler-server.v1');
    expect(validator.violation(s, { hostname: 'h', port: 22, protocol: 'tcp' })).toBeNull();
    expect(validator.violation(s, { hostname: 'h', port: 22, protocol: null })).toBeNull();
    expect(validator.violation(s, { hostname: 'h', port: 22, protocol: 'icmp' })).toMatchObject({ field: 'protocol' });
    const check = {
      interval: '5s',
      timeout: '500ms',
      address: 'localhost:22',
      actions: [{ trigger: 'fail', action: 'mark unhealthy', consecutiveEvents: 2 }],
    };
    expect(validator.violation(s, { hostname: 'h', port: 22, portChecks: [check] })).toBeNull();
    expect(validator.violation(s, { hostname: 'h', port: 22, portChecks: [{ ...check, actions: [] }] })).toMatchObject({
      field: 'portChecks.0.actions',
    });
    expect(
      validator.violation(s, {
        hostname: 'h',
        port: 22,
        httpChecks: [{ url: 'http://x', interval: '1m', timeout: '1s', expectStatus: 99 }],
      }),
    ).toMatchObject({
      field: 'httpChecks.0.expectStatus',
    });
  });

  it('intercept.v1: non-empty unique protocol, address and port-range sets', () => {
    const s = schemaOf('intercept.v1');
    const ok = {
      protocols: ['tcp', 'udp'],
      addresses: ['*.example.com', '10.0.0.0/8', 'db.local'],
      portRanges: [{ low: 80, high: 443 }],
    };
    expect(validator.violation(s, ok)).toBeNull();
    expect(
      validator.violation(s, {
        ...ok,
        dialOptions: { identity: '$dst_ip', connectTimeoutSeconds: 5 },
        sourceIp: '$src_ip:$src_port',
      }),
    ).toBeNull();
    expect(validator.violation(s, { ...ok, protocols: [] })).toMatchObject({ field: 'protocols' });
    expect(validator.violation(s, { ...ok, protocols: ['tcp', 'tcp'] })).toMatchObject({ field: 'protocols' });
    expect(validator.violation(s, { ...ok, addresses: [''] })).toMatchObject({ field: 'addresses.0' });
    expect(validator.violation(s, { ...ok, portRanges: [{ low: 1 }] })).toMatchObject({
      field: 'portRanges.0',
      reason: 'portRanges.0 is invalid: portRanges.0: high is required',
    });
    expect(validator.violation(s, { addresses: ok.addresses, portRanges: ok.portRanges })).toMatchObject({
      field: '(root)',
      reason: '(root) is invalid: (root): protocols is required',
    });
  });

  it('host.v1: each of protocol, address and port is fixed or forwarded within an allowed set', () => {
    const s = schemaOf('host.v1');
    expect(validator.violation(s, { protocol: 'tcp', address: 'localhost', port: 8080 })).toBeNull();
    expect(
      validator.violation(s, {
        forwardProtocol: true,
        allowedProtocols: ['tcp'],
        forwardAddress: true,
        allowedAddresses: ['10.0.0.0/24'],
        forwardPort: true,
        allowedPortRanges: [{ low: 1, high: 1024 }],
        listenOptions: { bindUsingEdgeIdentity: true, precedence: 'required', cost: 10, maxConnections: 3 },
        proxy: { type: 'http', address: 'proxy:3128' },
      }),
    ).toBeNull();
    expect(validator.violation(s, { address: 'localhost', port: 8080 })).toMatchObject({
      reason: '(root) is invalid: (root): protocol is required',
    });
    expect(validator.violation(s, { protocol: 'tcp', forwardAddress: true, port: 1 })).toMatchObject({
      reason: '(root) is invalid: (root): allowedAddresses is required',
    });
    expect(
      validator.violation(s, { protocol: 'tcp', address: 'a', port: 1, listenOptions: { precedence: 'sometimes' } }),
    ).toMatchObject({
      field: 'listenOptions.precedence',
    });
  });

  it('host.v2: a non-empty list of host.v1 terminators', () => {
    const s = schemaOf('host.v2');
    expect(validator.violation(s, { terminators: [{ protocol: 'udp', address: '127.0.0.1', port: 53 }] })).toBeNull();
    expect(validator.violation(s, { terminators: [] })).toMatchObject({ field: 'terminators' });
    expect(validator.violation(s, { terminators: [{ protocol: 'udp', address: '127.0.0.1' }] })).toMatchObject({
      field: 'terminators.0',
      reason: 'terminators.0 is invalid: terminators.0: port is required',
    });
  });
});

describe('administrator schemas', () => {
  it('refuses what is not a JSON schema, reads draft-04/06/07 markers, ignores unknown formats', () => {
    expect(validator.schemaProblem({ type: 'object', properties: { a: { type: 'no-such-type' } } })).toMatch(
      /properties/,
    );
    expect(validator.schemaProblem({ type: 'object', required: 'a' })).not.toBeNull();
    expect(
      validator.schemaProblem({ type: 'object', properties: { a: { $ref: '#/definitions/missing' } } }),
    ).not.toBeNull();
    expect(
      validator.schemaProblem({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object' }),
    ).toMatch(/unsupported/);
    const draft4 = {
      $schema: 'http://json-schema.org/draft-04/schema#',
      type: 'object',
      properties: { u: { type: 'string', format: 'no-such-format' } },
    };
    expect(validator.schemaProblem(draft4)).toBeNull();
    expect(validator.violation(draft4, { u: 'anything' })).toBeNull();
  });

  it('keeps schemas with the same $id apart (a type and its next version)', () => {
    const v1 = { $id: 'http://example/x.json', type: 'object', required: ['a'] };
    const v2 = { $id: 'http://example/x.json', type: 'object', required: ['b'] };
    expect(validator.violation(v1, { a: 1 })).toBeNull();
    expect(validator.violation(v2, { a: 1 })).toMatchObject({ reason: '(root) is invalid: (root): b is required' });
  });
});
