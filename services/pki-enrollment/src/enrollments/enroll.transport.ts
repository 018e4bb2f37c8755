import { ApiError, type OperationReply, type OperationRequest } from '@ziti/contracts';
import { type OperationHandlers, firstQueryValue, reply } from '@ziti/platform';
import type { EnrollRequest, EnrollResult, EnrollService } from './enroll.domain.ts';
import type { EnrollmentJwtIssuer } from './enrollment-jwt.domain.ts';

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
/** A JSON object body as it came (the enroll operations that declare no body pass any JSON on unread). */
const jsonBody = (req: OperationRequest): Record<string, unknown> => (isRecord(req.body) ? req.body : {});
const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** Non-JSON bodies the enroll endpoints read (ZITI-FACTS §8.2); anything else is INVALID_CONTENT_TYPE. */
const rawEnrollTypes = new Set([
  'text/plain',
  'application/x-pem-file',
  'application/pkcs7-mime',
  'application/pkcs10',
]);

/** Reads an `/enroll*` request: token from the query (or a JSON body), a CSR as raw PEM or `clientCsr`. */
function enrollRequest(req: OperationRequest): EnrollRequest {
  const out: EnrollRequest = { clientCertChain: req.clientCertChain ?? [] };
  const token = firstQueryValue(req.query.token);
  if (req.rawBody !== undefined) {
    const type = req.contentType ?? '';
    if (!rawEnrollTypes.has(type)) {
      throw new ApiError(
        'INVALID_CONTENT_TYPE',
        { code: 'INVALID_CONTENT_TYPE', message: `The content type supplied is not acceptable: ${type}` },
        `The content type supplied is not acceptable: ${type}`,
      );
    }
    const bytes = Buffer.from(req.rawBody, 'base64');
    // application/pkcs10 may carry the DER itself; everything else is PEM text.
    out.csrPem = type === 'application/pkcs10' && bytes[0] === 0x30 ? new Uint8Array(bytes) : bytes.toString('utf8');
  } else if (req.body !== undefined) {
    const body = jsonBody(req);
    out.body = body;
    const csr = text(body.clientCsr) ?? text(body.certCsr);
    if (csr !== undefined) out.csrPem = csr;
    const password = text(body.password);
    if (password !== undefined) out.password = password;
    const name = text(body.name);
    if (name !== undefined) out.requestedName = name;
    if (token === undefined && text(body.token) !== undefined) out.token = text(body.token)!;
  }
  if (token !== undefined) out.token = token;
  return out;
}

/** `Accept` names application/json explicitly (the ott answer is PEM otherwise). */
function wantsJson(req: OperationRequest): boolean {
  return (req.accept ?? '').split(',').some((part) => part.split(';')[0]!.trim().toLowerCase() === 'application/json');
}

/**
 * ott on `/enroll`: the leaf as PEM unless JSON was asked for explicitly (what SDKs rely on);
 * `/enroll/ott` is declared JSON-only by the spec, so it always answers the envelope. JSON carries
 * the leaf and the intermediates.
 */
function enrollReply(req: OperationRequest, result: EnrollResult, alwaysJson = false): OperationReply {
  if (result.kind === 'certificate') {
    return alwaysJson || wantsJson(req)
      ? reply.ok({ cert: result.chainPem })
      : reply.raw('application/x-pem-file', result.certPem);
  }
  if (result.kind === 'data') return reply.ok(result.data);
  return reply.empty();
}

/**
 * `/enroll*` with a token or a CA's certificate (router enrollment, `erott`, is
 * `routerEnrollmentOperations`), and the keys and challenge of the enrollment JWTs.
 */
export function enrollOperations(deps: { enroll: EnrollService; jwts: EnrollmentJwtIssuer }) {
  const { enroll, jwts } = deps;
  return {
    'client.enroll': async (req) => {
      const request = enrollRequest(req);
      // Only `method=ca` is taken from the request; otherwise the token's enrollment decides.
      const result =
        firstQueryValue(req.query.method) === 'ca'
          ? await enroll.enrollWithCa(request)
          : await enroll.enrollWithToken(request);
      return enrollReply(req, result);
    },
    'client.enrollOtt': async (req) => enrollReply(req, await enroll.enrollWithToken(enrollRequest(req), 'ott'), true),
    'client.enrollOttCa': async (req) => enrollReply(req, await enroll.enrollWithToken(enrollRequest(req), 'ottca')),
    'client.enrollUpdb': async (req) => enrollReply(req, await enroll.enrollWithToken(enrollRequest(req), 'updb')),
    'client.enrollCa': async (req) => enrollReply(req, await enroll.enrollWithCa(enrollRequest(req))),
    'client.getEnrollmentJwks': async () => reply.json(await jwts.jwks()),
    'client.enrollmentChallenge': async (req) =>
      reply.json(await jwts.signChallenge({ keyId: req.body.keyId, nonce: req.body.nonce })),
  } satisfies Partial<OperationHandlers<'pki-enrollment'>>;
}
