import type { LockOption } from '@ziti/platform/db/row-lock';
import type { Enrollment, ListInput, ListPage } from '../shared/model.domain.ts';

export interface EnrollmentStore {
  /** `forUpdate`: as for CAs. */
  get(id: string, options?: LockOption): Promise<Enrollment | null>;
  /** The enrollment of a token. */
  findByToken(token: string): Promise<Enrollment | null>;
  /**
   * Claims the enrollment for one use until `until`: true unless it is gone, its token changed or
   * a live claim holds it (one use at a time, without a transaction held while it is used).
   */
  claim(id: string, token: string, until: Date, now: Date): Promise<boolean>;
  /** Ends a claim: the enrollment can be used again. */
  release(id: string): Promise<void>;
  /**
   * Deletes the router's enrollments unless one is claimed (being used) at `now`; false when a
   * claimed one stays.
   */
  clearRouter(routerId: string, now: Date): Promise<boolean>;
  list(input: ListInput, identityId?: string): Promise<ListPage<Enrollment>>;
  listByIdentities(identityIds: string[]): Promise<Enrollment[]>;
  insert(enrollment: Enrollment): Promise<void>;
  update(enrollment: Enrollment): Promise<void>;
  delete(id: string): Promise<boolean>;
  /** Deletes an identity's enrollments (all, or only `ids`); returns the ids deleted. */
  deleteByIdentity(identityId: string, ids?: string[]): Promise<string[]>;
  /** Deletes the ottca enrollments of a CA (announcing each); their ids. */
  deleteByCa(caId: string): Promise<string[]>;
}
