import type { ListInput, ListPage, SessionCertificate } from '../shared/model.domain.ts';

export interface SessionCertificateStore {
  get(id: string, apiSessionId: string): Promise<SessionCertificate | null>;
  list(input: ListInput, apiSessionId: string): Promise<ListPage<SessionCertificate>>;
  countBySession(apiSessionId: string): Promise<number>;
  insert(certificate: SessionCertificate): Promise<void>;
  delete(id: string, apiSessionId: string): Promise<boolean>;
  deleteBySession(apiSessionId: string): Promise<number>;
  deleteByIdentity(identityId: string): Promise<number>;
  deleteExpired(now: Date): Promise<number>;
}
