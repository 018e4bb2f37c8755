import type { AccessLinks } from '../access/access.ports.ts';
import type {
  IdentityPostureData,
  LiveApiSessions,
  PostureResponseRecord,
  PromptedService,
} from './posture-data.domain.ts';

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

/**
 * What auth knows of an identity's API sessions (its session store). A login announces nothing
 * (docs/adr/0017), so policy's own records hold only the API sessions that have posture state;
 * auth's answer is every live one. An owner that can not be reached fails the call (an API error).
 */
export interface ApiSessionDirectory {
  /** The identity's live API sessions and the SDK info it last logged in with. */
  liveOf(identityId: string): Promise<LiveApiSessions>;
}

export interface PostureDataStores {
  data: PostureDataStore;
  links: AccessLinks;
}

export type PostureDataUnitOfWork = <T>(fn: (stores: PostureDataStores) => Promise<T>) => Promise<T>;
