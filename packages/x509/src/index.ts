/**
 * The controller PKI (pure domain code over webcrypto): CA creation/loading, CSR signing, server
 * certificates, chain verification, the EST cacerts PKCS#7 and enrollment JWTs.
 */
export {
  type CertificateInfo,
  certificateFromDer,
  fingerprint,
  fingerprintDer,
  KEY_USAGE,
  OID,
  parsePemChain,
  type SubjectAltNames,
  splitPemChain,
} from './certificates.ts';
export {
  type CsrInfo,
  DEFAULT_CLIENT_CERT_VALIDITY_DAYS,
  type IssuedCertificate,
  type IssueServerCertificateOptions,
  issueServerCertificate,
  MAX_CSR_BYTES,
  parseCsr,
  type SignCsrOptions,
  signCsr,
} from './csr.ts';
export {
  type EnrollmentJwtAlgorithm,
  type EnrollmentJwtClaims,
  type EnrollmentJwtHeader,
  jwtAlgorithmFor,
  signEnrollmentJwt,
  type VerifiedEnrollmentJwt,
  verifyEnrollmentJwt,
} from './jwt.ts';
export type { CryptoKey, SigningAlgorithm } from './keys.ts';
export { importPrivateKeyPem, subtle } from './keys.ts';
export { base64Lines, parsePkcs7Certs, pkcs7CertsOnly, pkcs7CertsOnlyDer } from './pkcs7.ts';
export {
  type ControllerPki,
  createControllerPki,
  INTERMEDIATE_CA_VALIDITY_YEARS,
  type LoadSignerOptions,
  loadSigner,
  type PemKeyPair,
  ROOT_CA_VALIDITY_YEARS,
  type Signer,
} from './signer.ts';
export {
  type ChainFailureReason,
  ChainVerificationError,
  isChainValid,
  type VerifiedChain,
  type VerifyChainOptions,
  verifyChain,
} from './verify.ts';
