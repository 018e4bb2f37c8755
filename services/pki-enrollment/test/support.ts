/**
 * Key pairs, CSRs and third-party CAs made inside a test: they live in test/support/x509.ts, which
 * every service's tests may import (a service's tests do not import another service's files). Kept
 * here for the tests that still import them from this path.
 */
export * from '../../../test/support/x509.ts';
