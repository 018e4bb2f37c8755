import { timingSafeEqual } from 'node:crypto';
import type { AdmittableRouter } from '@ziti/contracts';

/** What is known of a connecting router before it is let in. */
export interface AdmissionFacts {
  /** The client certificate chain verified against the controller's CA bundle. */
  chainVerified: boolean;
  /** The leaf certificate's common name (enrollment sets it to the router id). */
  commonName: string | null;
  /** Lower-case hex SHA-1 of the leaf certificate's DER. */
  fingerprint: string | null;
  /** The router id its hello names. */
  helloId: string;
  /** The router the certificate names, as inventory has it (null: no such router). */
  router: AdmittableRouter | null;
}

export type Admission = { outcome: 'admitted'; router: AdmittableRouter } | { outcome: 'refused'; reason: string };

/**
 * The reference's checks (ziti `controller/handler_ctrl/connect.go`, ROUTER-FACTS §1): the chain
 * verifies against the controller's CA; the hello names the certificate's router; that router
 * exists, is enrolled with exactly this certificate (fingerprints compared in constant time) and is
 * not disabled. A router whose re-enrollment is pending has no fingerprint and is refused until it
 * enrolls again (the user's description, §3).
 */
export function decideAdmission(f: AdmissionFacts): Admission {
  if (!f.chainVerified || !f.fingerprint) return refused('the client certificate does not chain to the controller CA');
  if (!f.commonName) return refused('the client certificate names no router');
  if (f.helloId !== f.commonName)
    return refused(`the hello names router ${f.helloId}, the certificate ${f.commonName}`);
  const router = f.router;
  if (!router) return refused(`no router ${f.commonName}`);
  if (!router.isVerified || !router.fingerprint) return refused(`router ${router.id} has not completed its enrollment`);
  if (!sameFingerprint(router.fingerprint, f.fingerprint))
    return refused(`the client certificate is not the one router ${router.id} enrolled with`);
  if (router.disabled) return refused(`router ${router.id} is disabled`);
  return { outcome: 'admitted', router };
}

function refused(reason: string): Admission {
  return { outcome: 'refused', reason };
}

export function sameFingerprint(a: string, b: string): boolean {
  const x = Buffer.from(a.toLowerCase(), 'utf8');
  const y = Buffer.from(b.toLowerCase(), 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}
