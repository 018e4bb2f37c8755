import type { ApiSessionStart } from './api-sessions.domain.ts';

/** What the API-session lifecycle writes (in the consumer's transaction). */
export interface ApiSessionRecords {
  started(s: ApiSessionStart): Promise<void>;
  mfaPassed(id: string, identityId: string, at: string): Promise<void>;
  /** Marks it ended and removes its edge sessions; returns how many. */
  ended(id: string, identityId: string, at: string): Promise<number>;
  /** Forgets the posture data reported in it (posture data lives as long as its API session). */
  forgetPosture(id: string): Promise<void>;
}
