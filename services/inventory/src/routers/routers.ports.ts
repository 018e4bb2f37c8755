import type { LockOption } from '@ziti/platform/db/row-lock';
import type {
  ListInput,
  ListPage,
  NamedRef,
  RoleFilter,
  Router,
  RouterEnrollment,
  RouterKind,
} from '../shared/model.domain.ts';

export interface RouterStore {
  get(id: string, kind?: RouterKind, options?: LockOption): Promise<Router | null>;
  /** Those of `ids` that exist (of `kind`, when given), in no particular order. */
  getMany(ids: string[], kind?: RouterKind): Promise<Router[]>;
  findByFingerprint(fingerprint: string): Promise<Router | null>;
  insert(router: Router): Promise<void>;
  update(router: Router): Promise<void>;
  delete(id: string): Promise<boolean>;
  /** `kind` narrows to edge or transit routers; undefined lists every router. */
  list(kind: RouterKind | undefined, input: ListInput, roleFilter?: RoleFilter): Promise<ListPage<Router>>;
  names(ids: string[]): Promise<NamedRef[]>;
  page(kind: RouterKind, after: string | undefined, limit: number, ids?: string[]): Promise<Router[]>;
}

/**
 * Enrollments of routers belong to pki-enrollment: inventory asks for one when a router needs it
 * and for the pending ones when it shows routers (their JWT, while unverified).
 */
export interface RouterEnrollments {
  /** Issues a new enrollment for the router, replacing any it has; null when enrollment is not offered. */
  issue(routerId: string, kind: RouterKind): Promise<RouterEnrollment | null>;
  /** Removes the router's pending enrollments. */
  revoke(routerId: string): Promise<void>;
  /** The pending enrollment of each router that has one. */
  pending(routerIds: string[]): Promise<Map<string, RouterEnrollment>>;
}
