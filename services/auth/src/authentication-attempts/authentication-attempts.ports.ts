/**
 * One authentication attempt as the login paths see it (issue 24): what auth reports as
 * `authentication.attempted`. Never a secret: no password, token, code, JWT or key, and no entered
 * username that matched no identity (often a mistyped password): an attempt that could not be tied
 * to an identity has no identity fields.
 */
export interface AuthenticationAttempt {
  /** `password` | `cert` | `ext-jwt` | `mfa`. */
  method: 'password' | 'cert' | 'ext-jwt' | 'mfa';
  outcome: 'succeeded' | 'failed';
  identityId?: string;
  identityName?: string;
  authenticatorId?: string;
  /** The API session a success opened, or the session an MFA code was checked for. */
  apiSessionId?: string;
  /** A failure's error code, as the caller received it (e.g. INVALID_AUTH). */
  reason?: string;
  at: Date;
}

/**
 * Port: where attempts are reported. `report` returns at once and never fails: it does no I/O on
 * the login's path (the store queues the attempt and writes it later, in a batch, docs/adr/0021),
 * and the request the attempt belongs to is taken from the caller's context when it is called.
 */
export interface AuthenticationAttempts {
  report(attempt: AuthenticationAttempt): void;
}
