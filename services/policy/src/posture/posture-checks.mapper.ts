import type { PostureCheck, PostureCheckSpec, PostureCheckType } from './posture-checks.domain.ts';

const self = (collection: string, id: string) => ({ self: { href: `./${collection}/${id}` } });

/** The type fields as the spec's posture check details show them (ziti `posture_check_api_model.go`). */
function typeFieldsOf(spec: PostureCheckSpec): Record<string, unknown> {
  switch (spec.typeId) {
    case 'OS':
      return { operatingSystems: spec.operatingSystems };
    case 'MAC':
      return { macAddresses: spec.macAddresses };
    case 'DOMAIN':
      return { domains: spec.domains };
    case 'PROCESS': {
      const { signerFingerprint, ...process } = spec.process;
      return { process: { ...process, ...(signerFingerprint ? { signerFingerprint } : {}) } };
    }
    case 'PROCESS_MULTI':
      return { semantic: spec.semantic, processes: spec.processes };
    case 'MFA':
      return {
        timeoutSeconds: spec.timeoutSeconds,
        promptOnWake: spec.promptOnWake,
        promptOnUnlock: spec.promptOnUnlock,
        ignoreLegacyEndpoints: spec.ignoreLegacyEndpoints,
      };
  }
}

/** A `postureCheckDetail` of the spec (discriminator `typeId`). */
export function postureCheckDetail(c: PostureCheck) {
  return {
    id: c.id,
    createdAt: c.createdAt.toISOString(),
    updatedAt: c.updatedAt.toISOString(),
    tags: c.tags,
    _links: self('posture-checks', c.id),
    name: c.name,
    typeId: c.spec.typeId,
    version: c.version,
    roleAttributes: c.roleAttributes,
    ...typeFieldsOf(c.spec),
  };
}

/** A `postureCheckTypeDetail`; `version` is never filled by the reference (an empty string here). */
export function postureCheckTypeDetail(t: PostureCheckType) {
  return {
    id: t.id,
    createdAt: t.createdAt.toISOString(),
    updatedAt: t.updatedAt.toISOString(),
    tags: t.tags,
    _links: self('posture-check-types', t.id),
    name: t.name,
    operatingSystems: t.operatingSystems,
    version: '',
  };
}
