import { z } from 'zod';

/**
 * Router enrollment between its two owners: inventory owns routers, pki-enrollment owns
 * enrollments and certificates (DESIGN §2). Calls on `ziti.rpc.<owner>.call.<action>`.
 */
export const routerEnrollmentActions = {
  /** pki-enrollment: a new enrollment (and JWT) for a router, replacing any it had. */
  issue: 'router.issueEnrollment',
  /** pki-enrollment: removes a router's pending enrollments. */
  revoke: 'router.revokeEnrollments',
  /** pki-enrollment: the pending enrollments of routers (shown while they are unverified). */
  pending: 'router.pendingEnrollments',
  /** inventory: a router completed its enrollment with this client certificate. */
  enrolled: 'router.enrolled',
  /** inventory: the router whose current client certificate has this fingerprint. */
  byFingerprint: 'router.byFingerprint',
  /** inventory: a router extended its certificates; the previous one stops being accepted. */
  certificateChanged: 'router.certificateChanged',
} as const;

export const routerKindSchema = z.enum(['edge', 'transit']);

export const issueRouterEnrollmentRequestSchema = z.object({ routerId: z.string().min(1), kind: routerKindSchema });

export const routerEnrollmentInfoSchema = z.object({
  id: z.string(),
  token: z.string(),
  jwt: z.string(),
  createdAt: z.string(),
  expiresAt: z.string(),
});
export type RouterEnrollmentInfo = z.infer<typeof routerEnrollmentInfoSchema>;

export const revokeRouterEnrollmentsRequestSchema = z.object({ routerId: z.string().min(1) });

export const pendingRouterEnrollmentsRequestSchema = z.object({ routerIds: z.array(z.string()).max(1000) });
export const pendingRouterEnrollmentsReplySchema = z.object({
  /** router id → its pending enrollment (routers without one are absent). */
  enrollments: z.record(z.string(), routerEnrollmentInfoSchema),
});

export const routerEnrolledRequestSchema = z.object({
  routerId: z.string().min(1),
  kind: routerKindSchema,
  /** Lower-case hex SHA-1 of the client certificate's DER. */
  fingerprint: z.string().min(1),
  certPem: z.string().min(1),
});

export const routerByFingerprintRequestSchema = z.object({ fingerprint: z.string().min(1) });
export const routerByFingerprintReplySchema = z.object({
  router: z.object({ id: z.string(), name: z.string(), kind: routerKindSchema, isVerified: z.boolean() }).nullable(),
});

export const routerCertificateChangedRequestSchema = z.object({
  routerId: z.string().min(1),
  /** The certificate the router extended with; the change only applies while it is still the current one. */
  previousFingerprint: z.string().min(1),
  fingerprint: z.string().min(1),
  certPem: z.string().min(1),
});
