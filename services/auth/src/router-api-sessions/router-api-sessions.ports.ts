/** The certificate fingerprints each identity may connect to an edge router with (its cert authenticators'). */
export interface CertificateFingerprints {
  ofIdentities(identityIds: string[]): Promise<Map<string, string[]>>;
}

/** Where auth tells the router edge of an API session that just opened (a signal, not an event: docs/adr/0023). */
export interface ApiSessionNotices {
  opened(session: { id: string; token: string; identityId: string }): void;
}
