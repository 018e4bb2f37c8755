import {
  ApiError,
  type OperationKeyOf,
  type OperationReply,
  type OperationRequest,
  type OperationRequestOf,
} from '@ziti/contracts';
import type { OperationHandlerMap } from '@ziti/platform';
import { firstQueryValue, listInputOf, pageReply, reply } from '@ziti/platform';
import type { CaService } from '../domain/ca-service.ts';
import type { ControllerPkiService } from '../domain/controller-pki.ts';
import type { EnrollRequest, EnrollResult, EnrollService } from '../domain/enroll-service.ts';
import type { EnrollmentService } from '../domain/enrollment-service.ts';
import type { EnrollmentJwtIssuer } from '../domain/enrollment-jwt.ts';
import type { ExtensionService } from '../domain/extension-service.ts';
import type { Enrollment } from '../domain/model.ts';
import type { CredentialPort } from '../domain/ports.ts';
import type { SessionCertificateService, SessionOwner } from '../domain/session-certificate-service.ts';
import { caDetail, enrollmentDetail, sessionCertificateDetail } from './mappers.ts';
import type { RouterEnrollmentOperationKey } from './router-enrollment.ts';

export interface PkiOperationDeps {
  pki: ControllerPkiService;
  cas: CaService;
  enrollments: EnrollmentService;
  enroll: EnrollService;
  extensions: ExtensionService;
  sessionCertificates: SessionCertificateService;
  jwts: EnrollmentJwtIssuer;
  credentials: CredentialPort;
}

function owner(req: OperationRequest): SessionOwner {
  if (!req.caller) throw new ApiError('UNAUTHORIZED');
  return { identityId: req.caller.identityId, apiSessionId: req.caller.apiSessionId };
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
/** A JSON object body as it came (the enroll operations that declare no body pass any JSON on unread). */
const jsonBody = (req: OperationRequest): Record<string, unknown> => (isRecord(req.body) ? req.body : {});
const id = (req: OperationRequest) => req.params.id ?? '';
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
 * Every operation pki-enrollment owns but the router enrollments (`routerEnrollmentOperations`),
 * keyed `<api>.<operationId>`; app.ts checks the two together name each one.
 */
export function pkiOperations(
  deps: PkiOperationDeps,
): OperationHandlerMap<Exclude<OperationKeyOf<'pki-enrollment'>, RouterEnrollmentOperationKey>> {
  const { pki, cas, enrollments, enroll, extensions, sessionCertificates, jwts, credentials } = deps;

  // ZITI-FACTS §8.4: base64 PKCS#7 certs-only, served without authentication on both APIs.
  const cacerts = async () =>
    reply.raw('application/pkcs7-mime', pki.wellKnownCaCerts(), 200, { 'content-transfer-encoding': 'base64' });

  async function enrollmentDetails(list: Enrollment[]) {
    const owners = await credentials.identities(list.flatMap((e) => (e.identityId ? [e.identityId] : [])));
    return list.map((e) => enrollmentDetail(e, e.identityId ? owners.get(e.identityId) : undefined));
  }

  const extend = async (
    req: OperationRequestOf<
      'client.extendCurrentIdentityAuthenticator' | 'management.extendCurrentIdentityAuthenticator'
    >,
  ) => {
    const caller = owner(req);
    const result = await extensions.extend({
      identityId: caller.identityId,
      authenticatorId: id(req),
      clientCertChain: req.clientCertChain ?? [],
      csrPem: req.body.clientCertCsr,
    });
    return reply.ok(result);
  };
  const extendVerify = async (
    req: OperationRequestOf<
      'client.extendVerifyCurrentIdentityAuthenticator' | 'management.extendVerifyCurrentIdentityAuthenticator'
    >,
  ) => {
    const caller = owner(req);
    await extensions.verifyExtension({
      identityId: caller.identityId,
      authenticatorId: id(req),
      clientCertPem: req.body.clientCert,
    });
    return reply.empty();
  };

  return {
    'client.listWellKnownCas': cacerts,
    'management.listWellKnownCas': cacerts,
    'client.extendCurrentIdentityAuthenticator': extend,
    'management.extendCurrentIdentityAuthenticator': extend,
    'client.extendVerifyCurrentIdentityAuthenticator': extendVerify,
    'management.extendVerifyCurrentIdentityAuthenticator': extendVerify,

    // ----------------------------------------------------------------------------------- CAs
    'management.listCas': async (req) => pageReply(await cas.list(listInputOf(req)), caDetail),
    'management.createCa': async (req) => reply.created((await cas.create(req.body)).id, 'cas'),
    'management.detailCa': async (req) => reply.ok(caDetail(await cas.get(id(req)))),
    'management.updateCa': async (req) => {
      await cas.update(id(req), req.body, 'replace');
      return reply.empty();
    },
    'management.patchCa': async (req) => {
      await cas.update(id(req), req.body, 'patch');
      return reply.empty();
    },
    'management.deleteCa': async (req) => {
      await cas.delete(id(req));
      return reply.empty();
    },
    'management.getCaJwt': async (req) => reply.raw('application/jwt', await cas.jwt(id(req))),
    'management.verifyCa': async (req) => {
      // The reference reads the body as text/plain PEM; a JSON string body is read the same way.
      const pem = req.rawBody !== undefined ? Buffer.from(req.rawBody, 'base64').toString('utf8') : (req.body ?? '');
      await cas.verify(id(req), pem);
      return reply.empty();
    },

    // --------------------------------------------------------------------------- enrollments
    'management.listEnrollments': async (req) => {
      const page = await enrollments.list(listInputOf(req));
      return pageReply({ ...page, items: await enrollmentDetails(page.items) });
    },
    'management.getIdentityEnrollments': async (req) => {
      const page = await enrollments.list(listInputOf(req), id(req));
      return pageReply({ ...page, items: await enrollmentDetails(page.items) });
    },
    'management.createEnrollment': async (req) => reply.created((await enrollments.create(req.body)).id, 'enrollments'),
    'management.detailEnrollment': async (req) =>
      reply.ok((await enrollmentDetails([await enrollments.get(id(req))]))[0]),
    'management.deleteEnrollment': async (req) => {
      await enrollments.delete(id(req));
      return reply.empty();
    },
    'management.refreshEnrollment': async (req) => {
      const refreshed = await enrollments.refresh(id(req), req.body.expiresAt);
      // The spec declares a create envelope (the reference sends an empty one): the id and link fit both.
      return reply.json({
        data: { id: refreshed.id, _links: { self: { href: `./enrollments/${refreshed.id}` } } },
        meta: {},
      });
    },
    'management.reEnrollAuthenticator': async (req) => {
      const enrollment = await extensions.reEnroll(id(req), req.body.expiresAt);
      return reply.created(enrollment.id, 'enrollments');
    },

    // ------------------------------------------------------------------------------- enroll
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

    // ---------------------------------------------------------------- API session certificates
    'client.listCurrentApiSessionCertificates': async (req) =>
      pageReply(await sessionCertificates.list(owner(req), listInputOf(req)), sessionCertificateDetail),
    'client.createCurrentApiSessionCertificate': async (req) => {
      const { certificate, cas: bundle } = await sessionCertificates.create(owner(req), req.body.csr);
      return reply.json(
        {
          data: {
            id: certificate.id,
            _links: { self: { href: `./current-api-session/certificates/${certificate.id}` } },
            certificate: certificate.certPem,
            cas: bundle,
          },
          meta: {},
        },
        201,
      );
    },
    'client.detailCurrentApiSessionCertificate': async (req) =>
      reply.ok(sessionCertificateDetail(await sessionCertificates.get(owner(req), id(req)))),
    'client.deleteCurrentApiSessionCertificate': async (req) => {
      await sessionCertificates.delete(owner(req), id(req));
      return reply.empty();
    },
  };
}
