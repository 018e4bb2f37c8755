import type { RoleTarget } from './roles.domain.ts';

/** Which of `ids` are live entities of a type (the read models; tombstones do not count). */
export interface RoleTargets {
  existing(target: RoleTarget, ids: string[]): Promise<Set<string>>;
  /** Names of the live entities among `ids`. */
  names(target: RoleTarget, ids: string[]): Promise<Map<string, string>>;
}
