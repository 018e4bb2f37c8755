import { ApiError, policyEventTypes, requireName } from '@ziti/contracts';
import type { ListInput, ListPage, RoleFilter } from '@ziti/platform/list-page';
import { base62Uuid } from '@ziti/platform/ids';
import type { AccessDerivation } from '../access/access.domain.ts';
import type { EntityChanges } from '../policies/entity-changes.domain.ts';
import type { PostureCheckStores, PostureCheckUnitOfWork } from './posture-checks.ports.ts';
import { parseSemVerRange } from './semver-range.domain.ts';

export const postureCheckTypeIds = ['OS', 'PROCESS', 'DOMAIN', 'MAC', 'MFA', 'PROCESS_MULTI'] as const;
export type PostureCheckTypeId = (typeof postureCheckTypeIds)[number];

/** No timeout (MFA checks without one, and every other type). */
export const noTimeout = -1;

export interface OperatingSystem {
  type: string;
  versions: string[];
}

/** The process a PROCESS check requires (one signer fingerprint at most). */
export interface ProcessSpec {
  osType: string;
  path: string;
  hashes: string[];
  signerFingerprint: string;
}

/** One process of a PROCESS_MULTI check. */
export interface ProcessMultiSpec {
  osType: string;
  path: string;
  hashes: string[];
  signerFingerprints: string[];
}

/** The fields of a check's type (ZITI-FACTS §7.3; the spec's polymorphic posture check bodies). */
export type PostureCheckSpec =
  | { typeId: 'OS'; operatingSystems: OperatingSystem[] }
  | { typeId: 'MAC'; macAddresses: string[] }
  | { typeId: 'DOMAIN'; domains: string[] }
  | { typeId: 'PROCESS'; process: ProcessSpec }
  | { typeId: 'PROCESS_MULTI'; semantic: 'AllOf' | 'AnyOf'; processes: ProcessMultiSpec[] }
  | {
      typeId: 'MFA';
      timeoutSeconds: number;
      promptOnWake: boolean;
      promptOnUnlock: boolean;
      ignoreLegacyEndpoints: boolean;
    };

export interface PostureCheck {
  id: string;
  name: string;
  version: number;
  roleAttributes: string[];
  tags: Record<string, unknown>;
  spec: PostureCheckSpec;
  createdAt: Date;
  updatedAt: Date;
}

/** One fixed posture check type record (ZITI-FACTS §7.3). */
export interface PostureCheckType {
  id: string;
  name: string;
  operatingSystems: OperatingSystem[];
  tags: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

/** A create, replace or patch body as the gateway validated it against the spec (discriminator `typeId`). */
export type PostureCheckInput = Record<string, unknown> & { typeId?: string };

// ---------------------------------------------------------------------------------------------
// Validation (the gateway checked the spec's shape: required fields, enums, minItems)

type Body = Record<string, unknown>;
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : []);
const has = (body: Body, key: string) => Object.hasOwn(body, key) && body[key] !== undefined && body[key] !== null;

/**
 * Entity role attributes are plain strings without `#`/`@` (ZITI-FACTS §2.3); stored sorted and
 * unique. The rule auth and inventory apply to identities, services and edge routers too (a what-if
 * checks proposed attributes with it).
 */
export function roleAttributesOf(values: unknown): string[] {
  const list = strings(values);
  for (const v of list) {
    if (v.startsWith('#') || v.startsWith('@')) {
      throw ApiError.field('roleAttributes', 'role attributes may not be prefixed with # or @', v);
    }
  }
  return [...new Set(list)].sort();
}

function typeIdOf(value: unknown): PostureCheckTypeId {
  if (!postureCheckTypeIds.includes(value as PostureCheckTypeId)) {
    throw ApiError.field('typeId', `typeId in body should be one of [${postureCheckTypeIds.join(' ')}]`, value);
  }
  return value as PostureCheckTypeId;
}

/**
 * OS: every version entry is a semantic version range (the reference parses them with
 * blang/semver `ParseRange`, field `operatingSystems[<type>][<index>]`); one entry per OS type,
 * the last winning, in the order the reference reads them back (by type).
 */
function operatingSystemsOf(value: unknown): OperatingSystem[] {
  const byType = new Map<string, OperatingSystem>();
  for (const raw of Array.isArray(value) ? (value as Body[]) : []) {
    const os = { type: String(raw.type ?? ''), versions: strings(raw.versions) };
    os.versions.forEach((version, i) => {
      if (!parseSemVerRange(version)) {
        throw ApiError.field(
          `operatingSystems[${os.type}][${i}]`,
          `invalid version for os: [${os.type}], version: [${version}]`,
          version,
        );
      }
    });
    byType.set(os.type, os);
  }
  return [...byType.values()].sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));
}

const macDigits = /^[0-9a-f]{12}$/;
/** The hex digits of a MAC address, lower case (what clients' responses are compared as). */
export const cleanHex = (s: string) => s.toLowerCase().replace(/[^a-f\d]+/g, '');

/** MAC: each entry a MAC address (12 hex digits once separators are dropped), stored as compared (lower-case hex). */
function macAddressesOf(value: unknown): string[] {
  return strings(value).map((address, i) => {
    const clean = cleanHex(address);
    if (!macDigits.test(clean) || /[^0-9a-fA-F:.\- ]/.test(address)) {
      throw ApiError.field(`macAddresses[${i}]`, `invalid MAC address [${address}]`, address);
    }
    return clean;
  });
}

function domainsOf(value: unknown): string[] {
  return strings(value).map((domain, i) => {
    const trimmed = domain.trim();
    if (!trimmed) throw ApiError.field(`domains[${i}]`, 'a domain may not be empty', domain);
    return trimmed;
  });
}

function pathOf(value: unknown, field: string): string {
  const path = typeof value === 'string' ? value.trim() : '';
  if (!path) throw ApiError.field(field, `${field} in body is required`, value);
  return path;
}

function processOf(value: unknown): ProcessSpec {
  const raw = (value ?? {}) as Body;
  return {
    osType: String(raw.osType ?? ''),
    path: pathOf(raw.path, 'process.path'),
    hashes: strings(raw.hashes),
    signerFingerprint: typeof raw.signerFingerprint === 'string' ? raw.signerFingerprint : '',
  };
}

function processesOf(value: unknown): ProcessMultiSpec[] {
  return (Array.isArray(value) ? (value as Body[]) : []).map((raw, i) => ({
    osType: String(raw.osType ?? ''),
    path: pathOf(raw.path, `processes[${i}].path`),
    hashes: strings(raw.hashes),
    signerFingerprints: strings(raw.signerFingerprints),
  }));
}

function semanticOf(value: unknown): 'AllOf' | 'AnyOf' {
  if (value !== 'AllOf' && value !== 'AnyOf') {
    throw ApiError.field('semantic', 'semantic in body should be one of [AllOf AnyOf]', value);
  }
  return value;
}

/** MFA: a timeout of zero or less is no timeout (-1), as the reference stores it. */
function timeoutOf(value: unknown): number {
  const n = typeof value === 'number' && Number.isInteger(value) ? value : noTimeout;
  return n <= 0 ? noTimeout : n;
}

/**
 * The type fields of a body: for create and replace all from the body (absent optional ones
 * empty or false); for patch the current ones with those present replaced.
 */
export function specOf(typeId: PostureCheckTypeId, body: Body, current?: PostureCheckSpec): PostureCheckSpec {
  const keep = (key: string) => current !== undefined && !has(body, key);
  const cur = current as Record<string, unknown> | undefined;
  switch (typeId) {
    case 'OS':
      return {
        typeId,
        operatingSystems: keep('operatingSystems')
          ? (cur!.operatingSystems as OperatingSystem[])
          : operatingSystemsOf(body.operatingSystems),
      };
    case 'MAC':
      return {
        typeId,
        macAddresses: keep('macAddresses') ? (cur!.macAddresses as string[]) : macAddressesOf(body.macAddresses),
      };
    case 'DOMAIN':
      return { typeId, domains: keep('domains') ? (cur!.domains as string[]) : domainsOf(body.domains) };
    case 'PROCESS': {
      if (keep('process')) return { typeId, process: cur!.process as ProcessSpec };
      // A patch changes the process fields it names and keeps the others, as the reference's
      // field-wise patch does (the CLI's `update posture-check process -p …` sends path and osType only).
      const given = body.process;
      const merged =
        current && given && typeof given === 'object' && !Array.isArray(given)
          ? { ...(cur!.process as ProcessSpec), ...(given as Body) }
          : given;
      return { typeId, process: processOf(merged) };
    }
    case 'PROCESS_MULTI':
      return {
        typeId,
        semantic: keep('semantic') ? (cur!.semantic as 'AllOf' | 'AnyOf') : semanticOf(body.semantic),
        processes: keep('processes') ? (cur!.processes as ProcessMultiSpec[]) : processesOf(body.processes),
      };
    case 'MFA': {
      const flag = (key: string) => (keep(key) ? (cur![key] as boolean) : body[key] === true);
      return {
        typeId,
        timeoutSeconds: keep('timeoutSeconds') ? (cur!.timeoutSeconds as number) : timeoutOf(body.timeoutSeconds),
        promptOnWake: flag('promptOnWake'),
        promptOnUnlock: flag('promptOnUnlock'),
        ignoreLegacyEndpoints: flag('ignoreLegacyEndpoints'),
      };
    }
  }
}

/** The type fields of a check as its detail, events and posture queries show them. */
export function specFields(spec: PostureCheckSpec): Record<string, unknown> {
  const { typeId: _typeId, ...fields } = spec;
  return fields;
}

/** The full state a posture check event carries. */
export function postureCheckState(c: PostureCheck): Record<string, unknown> {
  return {
    id: c.id,
    name: c.name,
    typeId: c.spec.typeId,
    version: c.version,
    roleAttributes: c.roleAttributes,
    ...specFields(c.spec),
    tags: c.tags,
    createdAt: c.createdAt.toISOString(),
    updatedAt: c.updatedAt.toISOString(),
  };
}

/**
 * Posture checks (ZITI-FACTS §6.3, §7.3): administrators define them with role attributes, service
 * policies select them by `postureCheckRoles`. Every change writes the row, relinks the check to
 * the policies that select it (under the derivation lock), moves the service views of those
 * policies' identities, and announces the check's full state — in one transaction.
 */
export class PostureCheckService {
  constructor(
    private readonly work: PostureCheckUnitOfWork,
    private readonly read: PostureCheckUnitOfWork,
    private readonly access: AccessDerivation,
    private readonly references: Pick<EntityChanges, 'dropReferences' | 'announce'>,
    private readonly now: () => Date = () => new Date(),
  ) {}

  list(input: ListInput, roleFilter?: RoleFilter): Promise<ListPage<PostureCheck>> {
    return this.read((s) => s.checks.list(input, roleFilter));
  }

  get(id: string): Promise<PostureCheck> {
    return this.read((s) => this.load(s, id));
  }

  roleAttributes(input: ListInput): Promise<ListPage<string>> {
    return this.read((s) => s.checks.roleAttributes(input));
  }

  listTypes(input: ListInput): Promise<ListPage<PostureCheckType>> {
    return this.read((s) => s.types.list(input));
  }

  getType(id: string): Promise<PostureCheckType> {
    return this.read(async (s) => {
      const type = await s.types.get(id);
      if (!type) throw ApiError.notFound('postureCheckType', id);
      return type;
    });
  }

  async create(input: PostureCheckInput): Promise<PostureCheck> {
    const now = this.now();
    const typeId = typeIdOf(input.typeId);
    const check: PostureCheck = {
      id: base62Uuid(),
      name: requireName(input.name),
      version: 1,
      roleAttributes: roleAttributesOf(input.roleAttributes),
      tags: (input.tags as Record<string, unknown> | null | undefined) ?? {},
      spec: specOf(typeId, input),
      createdAt: now,
      updatedAt: now,
    };
    return this.work(async (s) => {
      await s.checks.insert(check);
      await this.changed(s, 'created', check);
      return check;
    });
  }

  /**
   * PUT replaces every updatable field (absent ones become empty); PATCH only those present. The
   * type of a check is fixed: a body of another `typeId` is refused (field `typeId`).
   */
  async update(id: string, input: PostureCheckInput, mode: 'replace' | 'patch'): Promise<void> {
    const present = (key: string) => mode === 'replace' || has(input, key);
    await this.work(async (s) => {
      const current = await this.load(s, id, true);
      if (input.typeId !== undefined && input.typeId !== current.spec.typeId) {
        throw ApiError.field(
          'typeId',
          `typeId can not be changed from ${current.spec.typeId} to ${String(input.typeId)}`,
          input.typeId,
        );
      }
      const next: PostureCheck = {
        ...current,
        spec: specOf(current.spec.typeId, input, mode === 'patch' ? current.spec : undefined),
        updatedAt: this.now(),
      };
      if (present('name')) next.name = requireName(input.name);
      if (present('roleAttributes')) next.roleAttributes = roleAttributesOf(input.roleAttributes);
      if (present('tags')) next.tags = (input.tags as Record<string, unknown> | null | undefined) ?? {};
      await s.checks.update(next);
      await this.changed(s, 'updated', next);
    });
  }

  /**
   * Deleting a check removes its `@id` from the service policies that name it, keeping their
   * `updatedAt` (as the reference does); each is announced and relinked as any policy change.
   */
  async delete(id: string): Promise<void> {
    await this.work(async (s) => {
      const current = await this.load(s, id, true);
      await s.checks.delete(id);
      await this.references.announce(s, await this.references.dropReferences(s, 'postureChecks', [id]));
      await this.changed(s, 'deleted', { ...current, updatedAt: this.now() });
    });
  }

  private async load(s: PostureCheckStores, id: string, forUpdate = false): Promise<PostureCheck> {
    const check = await s.checks.get(id, { forUpdate });
    if (!check) throw ApiError.notFound('postureCheck', id);
    return check;
  }

  private async changed(s: PostureCheckStores, what: 'created' | 'updated' | 'deleted', check: PostureCheck) {
    await this.access.postureCheckChanged(s.links, check.id);
    const def = {
      created: policyEventTypes.postureCheckCreated,
      updated: policyEventTypes.postureCheckUpdated,
      deleted: policyEventTypes.postureCheckDeleted,
    }[what];
    await s.events.emit(def, def.schema.parse(postureCheckState(check)));
  }
}
