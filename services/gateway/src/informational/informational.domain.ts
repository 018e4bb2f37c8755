import { type ApiName, type OperationDef, apiBasePath } from '@ziti/contracts';

/** The version this controller reports: the reference release whose API it implements (ADR 0001). */
export const controllerVersion = {
  version: 'v1.1.9',
  revision: process.env.ZITI_REVISION ?? 'development',
  buildDate: process.env.ZITI_BUILD_DATE ?? '2026-11-21T00:00:00Z',
  runtimeVersion: `node${process.versions.node}`,
};

export function versionData(advertisedAddress: string) {
  const api = (name: ApiName) => ({
    v1: { path: apiBasePath[name], apiBaseUrls: [`https://${advertisedAddress}${apiBasePath[name]}`] },
  });
  return {
    ...controllerVersion,
    capabilities: [] as string[],
    apiVersions: { edge: api('client'), 'edge-client': api('client'), 'edge-management': api('management') },
  };
}

export const enumeratedCapabilities = ['OIDC_AUTH', 'HA_CONTROLLER'];

const specIds = { 'edge-client': 'client', 'edge-management': 'management' } as const;
export type SpecId = keyof typeof specIds;

export function specApi(id: string): ApiName | undefined {
  return Object.hasOwn(specIds, id) ? specIds[id as SpecId] : undefined;
}

const startedAt = new Date().toISOString();

export function specDetail(id: SpecId) {
  return {
    id,
    name: id,
    createdAt: startedAt,
    updatedAt: startedAt,
    tags: {},
    _links: { self: { href: `./specs/${id}` }, spec: { href: `./specs/${id}/spec` } },
  };
}

/** `GET /specs` lists only the client spec on both APIs, like the reference (ZITI-FACTS §7.7). */
export function specList() {
  return [specDetail('edge-client')];
}

export type { OperationDef };
