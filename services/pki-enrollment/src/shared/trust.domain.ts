import { ApiError } from '@ziti/contracts';
import { type CertificateInfo, parsePemChain } from '@ziti/x509';
import { ChainVerificationError, type VerifiedChain, verifyChain } from '@ziti/x509';

/** At most this many certificates are looked at in a presented chain (bounded work). */
export const MAX_PRESENTED_CHAIN = 10;
/** Largest certificate bundle accepted in a request body (a CA's certPem, a verification certificate). */
export const MAX_CERT_PEM_BYTES = 64 * 1024;

/** The leaf of a presented chain, parsed; undefined when there is none or it does not parse. */
export function presentedLeaf(chainPem: readonly string[]): CertificateInfo | undefined {
  try {
    return chainPem[0] ? parsePemChain(chainPem[0])[0] : undefined;
  } catch {
    return undefined;
  }
}

export interface TrustOutcome {
  chain: VerifiedChain;
  /** Only verifies at a time inside the leaf's validity, not now. */
  expired: boolean;
}

/**
 * Verifies a presented chain (leaf first) up to the certificates of `anchorsPem`. With
 * `tolerateExpiry`, a chain that fails only on time is verified again at a moment inside the
 * leaf's validity and reported `expired` (the auth policy's `allowExpiredCerts` decides on it).
 * Throws `ChainVerificationError` (CERT_FAILED_VALIDATION).
 */
export async function verifyPresentedChain(
  chainPem: readonly string[],
  anchorsPem: string,
  options: { usage?: 'clientAuth'; tolerateExpiry?: boolean; now?: Date } = {},
): Promise<TrustOutcome> {
  const presented = chainPem.slice(0, MAX_PRESENTED_CHAIN);
  if (presented.length === 0) throw new ChainVerificationError('MALFORMED', 'no client certificate was presented');
  const [leafPem, ...intermediates] = presented as [string, ...string[]];
  const now = options.now ?? new Date();
  const verifyOptions = { ...(options.usage ? { usage: options.usage } : {}) };
  try {
    return {
      chain: await verifyChain(leafPem, intermediates, [anchorsPem], { ...verifyOptions, at: now }),
      expired: false,
    };
  } catch (err) {
    const timeOnly =
      err instanceof ChainVerificationError && (err.reason === 'EXPIRED' || err.reason === 'NOT_YET_VALID');
    const leaf = presentedLeaf(presented);
    if (!timeOnly || !options.tolerateExpiry || !leaf) throw err;
    const at =
      now > leaf.notAfter ? new Date(leaf.notAfter.getTime() - 1000) : new Date(leaf.notBefore.getTime() + 1000);
    return { chain: await verifyChain(leafPem, intermediates, [anchorsPem], { ...verifyOptions, at }), expired: true };
  }
}

/** `verifyPresentedChain` as a boolean-ish: the outcome, or undefined when it does not verify. */
export async function tryVerifyPresentedChain(
  chainPem: readonly string[],
  anchorsPem: string,
  options: { usage?: 'clientAuth'; tolerateExpiry?: boolean; now?: Date } = {},
): Promise<TrustOutcome | undefined> {
  try {
    return await verifyPresentedChain(chainPem, anchorsPem, options);
  } catch (err) {
    if (err instanceof ApiError) return undefined;
    throw err;
  }
}
