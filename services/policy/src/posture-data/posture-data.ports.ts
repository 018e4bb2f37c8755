import type { AccessLinks } from '../access/access.ports.ts';
import type { IdentityPostureData, PostureResponseRecord, PromptedService } from './posture-data.domain.ts';

export interface PostureDataStore {
  /** Whether the identity exists (live in the read model). */
  identityExists(identityId: string): Promise<boolean>;
  load(identityId: string): Promise<IdentityPostureData>;
  record(identityId: string, apiSessionId: string, responses: PostureResponseRecord[], at: Date): Promise<void>;
  /**
   * Services the identity may reach through a service policy naming an MFA check that prompts on
   * wake (or unlock), whose timeout the grace period shortens (`timeoutAbove`: the least remaining
   * time, in seconds, a timed check must still have); each with the least such timeout.
   */
  promptedServices(
    identityId: string,
    onWake: boolean,
    onUnlock: boolean,
    timeoutAbove: number,
  ): Promise<PromptedService[]>;
}

export interface PostureDataStores {
  data: PostureDataStore;
  links: AccessLinks;
}

export type PostureDataUnitOfWork = <T>(fn: (stores: PostureDataStores) => Promise<T>) => Promise<T>;
