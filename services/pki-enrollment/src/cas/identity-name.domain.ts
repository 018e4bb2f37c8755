/** The values a CA's `identityNameFormat` may use (ZITI-FACTS §8.2). */
export interface IdentityNameValues {
  caName: string;
  caId: string;
  commonName: string;
  requestedName: string;
  identityId: string;
}

const symbols: Record<string, keyof IdentityNameValues> = {
  '[caName]': 'caName',
  '[caId]': 'caId',
  '[commonName]': 'commonName',
  '[requestedName]': 'requestedName',
  '[identityId]': 'identityId',
};

/** Fills the format's symbols; unknown bracketed text stays as written. */
export function formatIdentityName(format: string, values: IdentityNameValues): string {
  return format.replace(/\[(caName|caId|commonName|requestedName|identityId)\]/g, (symbol) => values[symbols[symbol]!]);
}
