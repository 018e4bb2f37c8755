import { X509Certificate, createHash } from 'node:crypto';
import type { VerifyClientCertificateResult } from '@ziti/contracts';
import type { AttemptSubject } from '../authentication-attempts/authentication-attempts.domain.ts';
import type { AuthenticateInput, AuthenticatedSession, LoginContext } from './login.domain.ts';
import type { SessionOpening } from './session-opening.domain.ts';

/** Port: who vouches for a TLS client certificate. */
export interface ClientCertificateTrust {
  /** The controller PKI's CA certificates (PEM), the roots of controller-issued certificates. */
  controllerCaBundle(): Promise<string[]>;
  /** pki-enrollment's verdict on a chain (third-party CAs); null when it can not answer. */
  verifyWithPki(chainPem: string[]): Promise<VerifyClientCertificateResult | null>;
}

/** Certificate path validation; throws when `leaf` does not chain to one of `roots` at `at`. */
export type ChainVerifier = (
  leafPem: string,
  intermediatesPem: string[],
  rootsPem: string[],
  options: { at: Date; usage: 'clientAuth' },
) => Promise<unknown>;

/** Lower-case hex SHA-1 of a certificate's DER, the reference's fingerprint; null when unparseable. */
function certificateOf(pem: string): { cert: X509Certificate; fingerprint: string } | null {
  try {
    const cert = new X509Certificate(pem);
    return { cert, fingerprint: createHash('sha1').update(cert.raw).digest('hex') };
  } catch {
    return null;
  }
}

/**
 * `method=cert` (ZITI-FACTS §1.2): a controller-issued certificate is found by the fingerprint
 * of its authenticator and must chain to the controller CA bundle; otherwise pki-enrollment
 * judges the chain (a verified CA with `isAuthEnabled`) and the identity is the certificate's
 * authenticator or the CA's `externalIdClaim`. `allowExpiredCerts` decides whether validity
 * periods count.
 */
export class CertificateLogin {
  constructor(
    private readonly login: LoginContext,
    private readonly sessions: SessionOpening,
  ) {}

  /** `subject` learns whose certificate it is once it is found (for the attempt's report). */
  async authenticate(input: AuthenticateInput, subject: AttemptSubject): Promise<AuthenticatedSession> {
    const { deps, refuse } = this.login;
    const chain = input.clientCertChain ?? [];
    const leafPem = chain[0];
    if (!leafPem) return refuse('NO_CLIENT_CERTIFICATE');
    const leaf = certificateOf(leafPem);
    if (!leaf) return refuse('BAD_CLIENT_CERTIFICATE');
    const now = this.login.now();

    const byFingerprint = await deps.work(async (s) => {
      const authenticator = await s.authenticators.findByFingerprint(leaf.fingerprint);
      const identity = authenticator ? await s.identities.get(authenticator.identityId) : null;
      return authenticator && identity
        ? { authenticator, identity, policy: await s.authPolicies.get(identity.authPolicyId) }
        : null;
    });

    if (byFingerprint) {
      const { authenticator, identity, policy } = byFingerprint;
      subject.identity = identity;
      subject.authenticatorId = authenticator.id;
      if (policy && !policy.primary.cert.allowed) return refuse('CERT_NOT_ALLOWED', { identityId: identity.id });
      const allowExpired = policy?.primary.cert.allowExpiredCerts ?? true;
      const validNow = now >= new Date(leaf.cert.validFrom) && now <= new Date(leaf.cert.validTo);
      if (!validNow && !allowExpired) return refuse('CERT_EXPIRED', { identityId: identity.id });
      // Inside the leaf's validity when expired certificates are allowed, so only the path counts.
      const at = validNow ? now : clamp(now, new Date(leaf.cert.validFrom), new Date(leaf.cert.validTo));
      const controllerIssued = await deps
        .verifyChain(leafPem, chain.slice(1), await deps.certificates.controllerCaBundle(), {
          at,
          usage: 'clientAuth',
        })
        .then(() => true)
        .catch(() => false);
      if (!controllerIssued) {
        const verdict = await deps.certificates.verifyWithPki(chain);
        if (!trustedByPki(verdict, leaf.fingerprint, allowExpired))
          return refuse('CERT_UNTRUSTED', { identityId: identity.id });
      }
      return this.sessions.open(identity, authenticator.id, 'cert', input, null);
    }

    const verdict = await deps.certificates.verifyWithPki(chain);
    if (!verdict || !verdict.trusted || verdict.fingerprint !== leaf.fingerprint || verdict.isAuthEnabled === false) {
      return refuse('CERT_UNTRUSTED', { fingerprint: leaf.fingerprint });
    }
    const externalId = verdict.externalId ?? null;
    if (!externalId) return refuse('CERT_UNKNOWN', { fingerprint: leaf.fingerprint });
    const found = await deps.work(async (s) => {
      const identity = await s.identities.findByExternalId(externalId);
      return identity ? { identity, policy: await s.authPolicies.get(identity.authPolicyId) } : null;
    });
    if (!found) return refuse('CERT_UNKNOWN_EXTERNAL_ID', { externalId });
    subject.identity = found.identity;
    if (found.policy && !found.policy.primary.cert.allowed)
      return refuse('CERT_NOT_ALLOWED', { identityId: found.identity.id });
    if (verdict.expired && !(found.policy?.primary.cert.allowExpiredCerts ?? true))
      return refuse('CERT_EXPIRED', { identityId: found.identity.id });
    return this.sessions.open(found.identity, '', 'cert', input, null);
  }
}

function trustedByPki(
  verdict: VerifyClientCertificateResult | null,
  fingerprint: string,
  allowExpired: boolean,
): boolean {
  if (!verdict || !verdict.trusted || verdict.fingerprint !== fingerprint) return false;
  if (verdict.isAuthEnabled === false) return false;
  return !verdict.expired || allowExpired;
}

function clamp(at: Date, from: Date, to: Date): Date {
  return new Date(Math.min(Math.max(at.getTime(), from.getTime()), to.getTime()));
}
