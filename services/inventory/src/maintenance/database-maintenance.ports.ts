import type { IntegrityResult } from '@ziti/contracts';

/** The cluster's one data-integrity job, as stored (ZITI-FACTS §13). */
export interface IntegrityJobState {
  inProgress: boolean;
  fixingErrors: boolean;
  tooManyErrors: boolean;
  startTime: Date | null;
  endTime: Date | null;
  error: string | null;
  results: IntegrityResult[];
}

/** Coordinates replicas through the database: one job at a time, held by a lease. */
export interface IntegrityJobStore {
  /** Starts a job unless one is running under a live lease; false when one is. */
  tryStart(owner: string, fix: boolean, leaseMs: number): Promise<boolean>;
  /** Extends the lease; false when the job is no longer this owner's. */
  renew(owner: string, leaseMs: number): Promise<boolean>;
  finish(
    owner: string,
    outcome: { results: IntegrityResult[]; tooManyErrors: boolean; error: string | null },
  ): Promise<void>;
  read(): Promise<IntegrityJobState & { leaseExpired: boolean }>;
}

export interface RateLimitStore {
  /** Takes the named slot if it was last taken more than `intervalMs` ago (cluster-wide, atomic). */
  tryTake(name: string, intervalMs: number): Promise<boolean>;
}

/** Each database-owning service, asked over the bus. */
export interface ServiceMaintenance {
  readonly services: readonly string[];
  summaryCounts(service: string): Promise<Record<string, number>>;
  integrityCheck(service: string, fix: boolean): Promise<IntegrityResult[]>;
  snapshot(service: string, label: string): Promise<string>;
}
