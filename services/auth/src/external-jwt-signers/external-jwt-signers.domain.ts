import { ApiError, stringifyValue } from '@ziti/contracts';
import { base62Uuid } from '@ziti/platform/ids';
import { type ExternalJwtSigner, type ExternalJwtSignerInput, applySignerInput } from './external-jwt-signer.domain.ts';
import type { ListInput, ListPage } from '../shared/model.domain.ts';
import type { AuthStores, UnitOfWork } from '../shared/stores.ports.ts';
import type { SessionFactorSync } from '../api-sessions/session-factors.domain.ts';

/** External JWT signers (management CRUD, admin; the client API's anonymous listing). */
export class ExternalJwtSignerService {
  constructor(
    private readonly work: UnitOfWork,
    private readonly sync: SessionFactorSync,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async get(id: string): Promise<ExternalJwtSigner> {
    return this.work((s) => this.load(s, id));
  }

  private async load(s: AuthStores, id: string, forUpdate = false): Promise<ExternalJwtSigner> {
    const signer = await s.extJwtSigners.get(id, { forUpdate });
    if (!signer) throw ApiError.notFound('externalJwtSigner', id);
    return signer;
  }

  async list(input: ListInput): Promise<ListPage<ExternalJwtSigner>> {
    return this.work((s) => s.extJwtSigners.list(input));
  }

  /** What an anonymous client may see: enabled signers with an `externalAuthUrl`. */
  async listForClients(input: ListInput): Promise<ListPage<ExternalJwtSigner>> {
    return this.work((s) => s.extJwtSigners.list(input, true));
  }

  async create(input: ExternalJwtSignerInput): Promise<ExternalJwtSigner> {
    const now = this.now();
    const empty: ExternalJwtSigner = {
      id: base62Uuid(),
      name: '',
      enabled: false,
      issuer: '',
      audience: null,
      certPem: null,
      fingerprint: null,
      commonName: null,
      notBefore: null,
      notAfter: null,
      kid: null,
      jwksEndpoint: null,
      claimsProperty: null,
      useExternalId: false,
      externalAuthUrl: null,
      clientId: null,
      scopes: [],
      tags: {},
      createdAt: now,
      updatedAt: now,
    };
    const signer = applySignerInput(empty, input, 'create');
    await this.work((s) => s.extJwtSigners.insert(signer));
    return signer;
  }

  async update(id: string, input: ExternalJwtSignerInput, mode: 'replace' | 'patch'): Promise<void> {
    await this.work(async (s) => {
      const current = await this.load(s, id, true);
      await s.extJwtSigners.update({ ...applySignerInput(current, input, mode), updatedAt: this.now() });
    });
    await this.sync.refreshSigner(id);
  }

  /** A signer named by an auth policy (allowed or required) can not go: 409 like the reference's FK check. */
  async delete(id: string): Promise<void> {
    await this.work(async (s) => {
      await this.load(s, id, true);
      const policies = await s.authPolicies.idsReferencingSigner(id);
      if (policies.length > 0) {
        throw new ApiError('CAN_NOT_DELETE_REFERENCED_ENTITY', {
          field: 'primary.extJwt.allowedSigners',
          reason: `entity type externalJwtSigners referenced by authPolicies: ${stringifyValue(policies)}`,
          value: stringifyValue(policies),
        });
      }
      await s.extJwtSigners.delete(id);
    });
  }
}
