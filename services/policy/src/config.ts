import { ConfigProblems, readClusterUrls, readProcessEnv, readServiceEnv } from '@ziti/platform';

/** The environment variable of policy's own Postgres database in the cluster. */
export const policyDatabaseVar = 'POLICY_DATABASE_URL';

/**
 * Everything a policy process reads, checked before it connects to anything: NATS, its database,
 * logging (policy has no settings of its own). Every problem is reported at once.
 */
export function readPolicyProcessConfig(source: NodeJS.ProcessEnv = process.env): void {
  const problems = new ConfigProblems();
  problems.take(() => readProcessEnv(source));
  problems.take(() => readServiceEnv(policyDatabaseVar, source));
  problems.take(() => readClusterUrls(policyDatabaseVar, source));
  problems.done();
}
