import { ApiError } from '@ziti/contracts';
import type { CertificateInfo } from '@ziti/x509';
import type { ExternalIdClaim } from '../shared/model.domain.ts';

const locations = ['COMMON_NAME', 'SAN_URI', 'SAN_EMAIL'] as const;
const matchers = ['ALL', 'PREFIX', 'SUFFIX', 'SCHEME'] as const;
const parsers = ['NONE', 'SPLIT'] as const;

/** The claim as the wire gives it (every property nullable). */
export interface ExternalIdClaimInput {
  location?: string | null;
  matcher?: string | null;
  matcherCriteria?: string | null;
  parser?: string | null;
  parserCriteria?: string | null;
  index?: number | null;
}

const field = (name: string, reason: string, value: unknown) =>
  ApiError.field(`externalIdClaim.${name}`, reason, value);

/**
 * Validates an externalIdClaim: all six properties present, SCHEME only with SAN_URI (and the
 * only matcher besides ALL there), criteria present where the matcher or parser needs them.
 */
export function assertExternalIdClaim(input: ExternalIdClaimInput): ExternalIdClaim {
  const location = input.location;
  const matcher = input.matcher;
  const parser = input.parser;
  if (!location || !(locations as readonly string[]).includes(location)) {
    throw field('location', `location should be one of [${locations.join(' ')}]`, location);
  }
  if (!matcher || !(matchers as readonly string[]).includes(matcher)) {
    throw field('matcher', `matcher should be one of [${matchers.join(' ')}]`, matcher);
  }
  if (!parser || !(parsers as readonly string[]).includes(parser)) {
    throw field('parser', `parser should be one of [${parsers.join(' ')}]`, parser);
  }
  if (input.index === null || input.index === undefined || !Number.isInteger(input.index) || input.index < 0) {
    throw field('index', 'index is required and must be a non-negative integer', input.index);
  }
  if (input.matcherCriteria === null || input.matcherCriteria === undefined) {
    throw field('matcherCriteria', 'matcherCriteria is required', input.matcherCriteria);
  }
  if (input.parserCriteria === null || input.parserCriteria === undefined) {
    throw field('parserCriteria', 'parserCriteria is required', input.parserCriteria);
  }
  if (location === 'SAN_URI' && matcher !== 'ALL' && matcher !== 'SCHEME') {
    throw field('matcher', `matcher ${matcher} is not supported for location SAN_URI (ALL or SCHEME)`, matcher);
  }
  if (location !== 'SAN_URI' && matcher === 'SCHEME') {
    throw field('matcher', 'matcher SCHEME is only supported for location SAN_URI', matcher);
  }
  if (matcher !== 'ALL' && input.matcherCriteria === '') {
    throw field('matcherCriteria', `matcher ${matcher} needs matcherCriteria`, input.matcherCriteria);
  }
  if (parser === 'SPLIT' && input.parserCriteria === '') {
    throw field('parserCriteria', 'parser SPLIT needs parserCriteria (the separator)', input.parserCriteria);
  }
  return {
    location: location as ExternalIdClaim['location'],
    matcher: matcher as ExternalIdClaim['matcher'],
    matcherCriteria: input.matcherCriteria,
    parser: parser as ExternalIdClaim['parser'],
    parserCriteria: input.parserCriteria,
    index: input.index,
  };
}

function schemeOf(uri: string): string {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(uri);
  return m ? m[1]!.toLowerCase() : '';
}

/**
 * The external id a certificate carries under a CA's claim: locate the values (CN, SAN URIs or
 * emails), keep the matching ones, parse (split) them, and take the value at `index`. Returns
 * undefined when nothing (or an empty value) is found.
 */
export function extractExternalId(claim: ExternalIdClaim, cert: CertificateInfo): string | undefined {
  let values: string[];
  switch (claim.location) {
    case 'COMMON_NAME':
      values = cert.commonName !== undefined ? [cert.commonName] : [];
      break;
    case 'SAN_URI':
      values = [...cert.sans.uris];
      break;
    case 'SAN_EMAIL':
      values = [...cert.sans.emailAddresses];
      break;
  }
  switch (claim.matcher) {
    case 'ALL':
      break;
    case 'PREFIX':
      values = values.filter((v) => v.startsWith(claim.matcherCriteria));
      break;
    case 'SUFFIX':
      values = values.filter((v) => v.endsWith(claim.matcherCriteria));
      break;
    case 'SCHEME':
      values = values.filter((v) => schemeOf(v) === claim.matcherCriteria.toLowerCase());
      break;
  }
  if (claim.parser === 'SPLIT') values = values.flatMap((v) => v.split(claim.parserCriteria));
  const value = values[claim.index];
  return value ? value : undefined;
}
