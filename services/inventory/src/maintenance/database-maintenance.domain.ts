import { ApiError, type IntegrityResult } from '@ziti/contracts';
import type {
  IntegrityJobState,
  IntegrityJobStore,
  RateLimitStore,
  ServiceMaintenance,
} from './database-maintenance.ports.ts';

/**
 * `/summary` also answers the reference's keys (`controller/db/stores.go GetEntityCounts`), which
 * the Admin Console's dashboard reads. Counts a service reports under another name are repeated
 * under the reference's: its child stores are `<type>.edge` (every service is an edge service here).
 */
export const referenceSummaryAliases: Readonly<Record<string, string>> = {
  'routers.edge': 'edgeRouters',
  'services.edge': 'services',
};

/**
 * Reference entity types this controller keeps no table of, with what they count here: the one
 * controller `/controllers` lists; no eventual events (events are delivered from outboxes) and no
 * revocations (tokens end with their API session).
 */
export const referenceSummaryFixed: Readonly<Record<string, number>> = {
  controllers: 1,
  eventualEvents: 0,
  revocations: 0,
};

export const maxIntegrityResults = 1000;
export const snapshotIntervalMs = 60_000;

export interface DatabaseMaintenanceOptions {
  /** This replica's name in the job lease. */
  owner: string;
  leaseMs?: number;
  newLabel: () => string;
  /** Runs a started job in the background (tests await it). */
  runInBackground?: (job: Promise<void>) => void;
}

/**
 * `/summary` and `/database/*` across the cluster: counts gathered from every service, one
 * integrity job at a time (check or fix) whose results are kept, and snapshots at most once a
 * minute, each service writing its own.
 */
export class DatabaseMaintenance {
  private readonly leaseMs: number;
  private readonly running = new Set<Promise<void>>();

  constructor(
    private readonly jobs: IntegrityJobStore,
    private readonly limits: RateLimitStore,
    private readonly cluster: ServiceMaintenance,
    private readonly options: DatabaseMaintenanceOptions,
  ) {
    this.leaseMs = options.leaseMs ?? 60_000;
  }

  async summary(): Promise<Record<string, number>> {
    const parts = await Promise.all(this.cluster.services.map((s) => this.cluster.summaryCounts(s)));
    const counts: Record<string, number> = Object.assign({ ...referenceSummaryFixed }, ...parts);
    for (const [key, ours] of Object.entries(referenceSummaryAliases))
      if (counts[ours] !== undefined) counts[key] = counts[ours];
    return counts;
  }

  /** 202 once started; RATE_LIMITED (429) while a check or fix runs anywhere in the cluster. */
  async startIntegrityJob(fix: boolean): Promise<void> {
    if (!(await this.jobs.tryStart(this.options.owner, fix, this.leaseMs))) {
      throw new ApiError('RATE_LIMITED', { code: 'UNHANDLED', message: 'a data integrity check is already running' });
    }
    const job = this.run(fix);
    this.running.add(job);
    void job.finally(() => this.running.delete(job));
    this.options.runInBackground?.(job);
  }

  private async run(fix: boolean): Promise<void> {
    const renew = setInterval(
      () => void this.jobs.renew(this.options.owner, this.leaseMs).catch(() => undefined),
      Math.max(1_000, this.leaseMs / 3),
    );
    renew.unref();
    const results: IntegrityResult[] = [];
    let tooManyErrors = false;
    const failures: string[] = [];
    try {
      for (const service of this.cluster.services) {
        try {
          for (const r of await this.cluster.integrityCheck(service, fix)) {
            if (results.length >= maxIntegrityResults) {
              tooManyErrors = true;
              break;
            }
            results.push({ description: `${service}: ${r.description}`, fixed: r.fixed });
          }
        } catch (err) {
          failures.push(`${service}: ${(err as Error).message}`);
        }
      }
    } finally {
      clearInterval(renew);
      await this.jobs
        .finish(this.options.owner, { results, tooManyErrors, error: failures.length > 0 ? failures.join('; ') : null })
        .catch(() => undefined);
    }
  }

  /**
   * The last job's outcome. A job whose replica died shows as ended with an error once its lease
   * has run out (another check may then start).
   */
  async results(): Promise<IntegrityJobState> {
    const { leaseExpired, ...state } = await this.jobs.read();
    if (state.inProgress && leaseExpired)
      return { ...state, inProgress: false, error: state.error ?? 'the check was interrupted before it finished' };
    return state;
  }

  /** RATE_LIMITED (429) within a minute of the last snapshot taken anywhere in the cluster. */
  async snapshot(): Promise<string[]> {
    if (!(await this.limits.tryTake('database-snapshot', snapshotIntervalMs))) {
      throw new ApiError('RATE_LIMITED', {
        code: 'UNHANDLED',
        message: 'a database snapshot was taken less than a minute ago',
      });
    }
    const label = this.options.newLabel();
    return Promise.all(this.cluster.services.map((s) => this.cluster.snapshot(s, label)));
  }

  /** Waits for jobs this replica runs (graceful stop, tests). */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.running]);
  }
}
