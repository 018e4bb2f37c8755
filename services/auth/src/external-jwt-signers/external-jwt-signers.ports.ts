import type { LockOption } from '@ziti/platform/db/row-lock';
import type { ListInput, ListPage } from '../shared/model.domain.ts';
import type { ExternalJwtSigner } from './external-jwt-signer.domain.ts';

export interface ExternalJwtSignerStore {
  /** `forUpdate`: as for authenticators. */
  get(id: string, options?: LockOption): Promise<ExternalJwtSigner | null>;
  findByIssuer(issuer: string): Promise<ExternalJwtSigner | null>;
  insert(signer: ExternalJwtSigner): Promise<void>;
  update(signer: ExternalJwtSigner): Promise<void>;
  delete(id: string): Promise<boolean>;
  /** `onlyWithAuthUrl`: the client API's anonymous listing (enabled signers with an externalAuthUrl). */
  list(input: ListInput, onlyWithAuthUrl?: boolean): Promise<ListPage<ExternalJwtSigner>>;
}
