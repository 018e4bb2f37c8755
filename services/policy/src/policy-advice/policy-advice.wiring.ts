import { type Database, createReader } from '@ziti/platform';
import { PolicyAdvisor } from './policy-advice.domain.ts';
import { PgAdvice } from './policy-advice.store.ts';

/** The policy advice (`/policy-advice`), read on the pool. */
export const policyAdviceWiring = (database: Database) =>
  new PolicyAdvisor(createReader(database, (db) => new PgAdvice(db)));
