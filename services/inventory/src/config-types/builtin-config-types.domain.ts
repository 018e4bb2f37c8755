/**
 * The config types every network has from its first start, with the reference's fixed ids and
 * names (ZITI-FACTS §7.4). The schemas are written out here from the facts: the tunneler
 * client/server pair, intercept.v1 and host.v1/v2 with their shared health-check definitions.
 */

type Schema = Record<string, unknown>;

const uint16 = { type: 'integer', minimum: 0, maximum: 65535 };

/** Health checks shared by ziti-tunneler-server.v1 and host.v1/v2. */
const healthCheckDefinitions: Schema = {
  duration: { type: 'string', pattern: '[0-9]+(h|m|s|ms)' },
  method: { type: 'string', enum: ['GET', 'POST', 'PUT', 'PATCH'] },
  action: {
    type: 'object',
    additionalProperties: false,
    required: ['trigger', 'action'],
    properties: {
      trigger: { type: 'string', enum: ['fail', 'pass', 'change'] },
      consecutiveEvents: uint16,
      duration: { $ref: '#/definitions/duration' },
      action: { type: 'string', pattern: '(mark (un)?healthy|increase cost [0-9]+|decrease cost [0-9]+|send event)' },
    },
  },
  actionList: { type: 'array', items: { $ref: '#/definitions/action' }, minItems: 1, maxItems: 20 },
  portCheck: {
    type: 'object',
    additionalProperties: false,
    required: ['interval', 'timeout', 'address'],
    properties: {
      interval: { $ref: '#/definitions/duration' },
      timeout: { $ref: '#/definitions/duration' },
      address: { type: 'string' },
      actions: { $ref: '#/definitions/actionList' },
    },
  },
  httpCheck: {
    type: 'object',
    additionalProperties: false,
    required: ['interval', 'timeout', 'url'],
    properties: {
      url: { type: 'string' },
      method: { $ref: '#/definitions/method' },
      body: { type: 'string' },
      interval: { $ref: '#/definitions/duration' },
      timeout: { $ref: '#/definitions/duration' },
      actions: { $ref: '#/definitions/actionList' },
      expectStatus: { type: 'integer', minimum: 100, maximum: 599 },
      expectInBody: { type: 'string' },
    },
  },
  portCheckList: { type: 'array', items: { $ref: '#/definitions/portCheck' } },
  httpCheckList: { type: 'array', items: { $ref: '#/definitions/httpCheck' } },
};

const healthCheckProperties: Schema = {
  portChecks: { $ref: '#/definitions/portCheckList' },
  httpChecks: { $ref: '#/definitions/httpCheckList' },
};

/**
 * Addresses are `idn-hostname` strings that may also be IPs, CIDRs or wildcards (`*.example`);
 * the format is documentation (clients parse them), only emptiness is refused.
 */
const tunnelDefinitions: Schema = {
  dialAddress: { type: 'string', format: 'idn-hostname', not: { pattern: '^$' } },
  listenAddress: { type: 'string', format: 'idn-hostname', not: { pattern: '^$' } },
  inhabitedSet: { type: 'array', minItems: 1, uniqueItems: true },
  portNumber: uint16,
  portRange: {
    type: 'object',
    additionalProperties: false,
    required: ['low', 'high'],
    properties: { low: { $ref: '#/definitions/portNumber' }, high: { $ref: '#/definitions/portNumber' } },
  },
  protocolName: { type: 'string', enum: ['tcp', 'udp'] },
  timeoutSeconds: { type: 'integer', minimum: 0, maximum: 2147483647 },
  proxyType: { type: 'string', enum: ['http'] },
  proxyConfiguration: {
    type: 'object',
    required: ['type', 'address'],
    properties: { type: { $ref: '#/definitions/proxyType' }, address: { type: 'string' } },
  },
};

const setOf = (item: string): Schema => ({
  allOf: [{ $ref: '#/definitions/inhabitedSet' }, { items: { $ref: `#/definitions/${item}` } }],
});

/** host.v1's object without `$id`/`definitions`: also host.v2's terminator item. */
const hostV1Body: Schema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...healthCheckProperties,
    protocol: { $ref: '#/definitions/protocolName' },
    forwardProtocol: { type: 'boolean', enum: [true] },
    allowedProtocols: setOf('protocolName'),
    address: { $ref: '#/definitions/dialAddress' },
    forwardAddress: { type: 'boolean', enum: [true] },
    allowedAddresses: setOf('listenAddress'),
    port: { $ref: '#/definitions/portNumber' },
    forwardPort: { type: 'boolean', enum: [true] },
    allowedPortRanges: setOf('portRange'),
    allowedSourceAddresses: setOf('listenAddress'),
    proxy: { $ref: '#/definitions/proxyConfiguration' },
    listenOptions: {
      type: 'object',
      additionalProperties: false,
      properties: {
        connectTimeoutSeconds: { $ref: '#/definitions/timeoutSeconds' },
        connectTimeout: { $ref: '#/definitions/duration' },
        maxConnections: { type: 'integer', minimum: 1 },
        identity: { type: 'string' },
        bindUsingEdgeIdentity: { type: 'boolean' },
        cost: uint16,
        precedence: { type: 'string', enum: ['default', 'required', 'failed'] },
      },
    },
  },
  // Exactly one way to choose each of protocol, address and port: fixed, or forwarded within an allowed set.
  allOf: [
    {
      if: { properties: { forwardProtocol: { const: true } }, required: ['forwardProtocol'] },
      then: { required: ['allowedProtocols'] },
      else: { required: ['protocol'] },
    },
    {
      if: { properties: { forwardAddress: { const: true } }, required: ['forwardAddress'] },
      then: { required: ['allowedAddresses'] },
      else: { required: ['address'] },
    },
    {
      if: { properties: { forwardPort: { const: true } }, required: ['forwardPort'] },
      then: { required: ['allowedPortRanges'] },
      else: { required: ['port'] },
    },
  ],
};

const hostDefinitions: Schema = { ...healthCheckDefinitions, ...tunnelDefinitions };

export interface BuiltinConfigType {
  id: string;
  name: string;
  schema: Schema;
}

export const builtinConfigTypes: BuiltinConfigType[] = [
  {
    id: 'f2dd2df0-9c04-4b84-a91e-71437ac229f1',
    name: 'ziti-tunneler-client.v1',
    schema: {
      $id: 'http://edge.openziti.org/schemas/ziti-tunneler-client.v1.config.json',
      type: 'object',
      additionalProperties: false,
      required: ['hostname', 'port'],
      properties: { hostname: { type: 'string' }, port: uint16 },
    },
  },
  {
    id: 'cea49285-6c07-42cf-9f52-09a9b115c783',
    name: 'ziti-tunneler-server.v1',
    schema: {
      $id: 'http://edge.openziti.org/schemas/ziti-tunneler-server.v1.config.json',
      type: 'object',
      additionalProperties: false,
      definitions: healthCheckDefinitions,
      required: ['hostname', 'port'],
      properties: {
        protocol: { type: ['string', 'null'], enum: ['tcp', 'udp', null] },
        hostname: { type: 'string' },
        port: uint16,
        ...healthCheckProperties,
      },
    },
  },
  {
    id: 'g7cIWbcGg',
    name: 'intercept.v1',
    schema: {
      $id: 'http://edge.openziti.org/schemas/intercept.v1.config.json',
      type: 'object',
      additionalProperties: false,
      definitions: tunnelDefinitions,
      required: ['protocols', 'addresses', 'portRanges'],
      properties: {
        protocols: setOf('protocolName'),
        addresses: setOf('listenAddress'),
        portRanges: setOf('portRange'),
        dialOptions: {
          type: 'object',
          additionalProperties: false,
          properties: { identity: { type: 'string' }, connectTimeoutSeconds: { $ref: '#/definitions/timeoutSeconds' } },
        },
        sourceIp: { type: 'string' },
      },
    },
  },
  {
    id: 'NH5p4FpGR',
    name: 'host.v1',
    schema: {
      $id: 'http://ziti-edge.netfoundry.io/schemas/host.v1.schema.json',
      definitions: hostDefinitions,
      ...hostV1Body,
    },
  },
  {
    id: 'host.v2',
    name: 'host.v2',
    schema: {
      $id: 'http://ziti-edge.netfoundry.io/schemas/host.v2.schema.json',
      definitions: {
        ...hostDefinitions,
        terminator: hostV1Body,
        terminatorList: { type: 'array', minItems: 1, items: { $ref: '#/definitions/terminator' } },
      },
      type: 'object',
      additionalProperties: false,
      required: ['terminators'],
      properties: { terminators: { $ref: '#/definitions/terminatorList' } },
    },
  },
];
