import {
  type ChannelMessage,
  CtrlMsgContentType,
  ctrl,
  createMessage,
  createResult,
  decodeCreateCircuitV2Request,
  decodeRouteResult,
  edge,
  encodeCreateCircuitV2Response,
  encodeEdgeError,
  protoMessage,
  replyTo,
} from '@ziti/channel';
import type { TerminatorPrecedence } from '@ziti/contracts';
import { type Logger, routerEdgeMetrics } from '@ziti/platform';
import type { ApiSessionSync } from '../api-sessions/api-session-sync.domain.ts';
import type { Circuits, DialOutcome } from '../circuits/circuits.domain.ts';
import type { EdgeRefusal } from '../shared/session-checks.domain.ts';
import type { RouterPeers } from '../links/router-peers.domain.ts';
import type { Terminators } from '../terminators/terminators.domain.ts';
import type { ChannelRouterLink } from './channel-router-link.transport.ts';

const errorCodes: Record<EdgeRefusal['code'], number> = {
  internal: edge.EdgeErrorCode.Internal,
  invalidApiSession: edge.EdgeErrorCode.InvalidApiSession,
  invalidSession: edge.EdgeErrorCode.InvalidSession,
  wrongSessionType: edge.EdgeErrorCode.WrongSessionType,
  invalidEdgeRouterForSession: edge.EdgeErrorCode.InvalidEdgeRouterForSession,
  invalidService: edge.EdgeErrorCode.InvalidService,
  invalidTerminator: edge.EdgeErrorCode.InvalidTerminator,
  invalidCost: edge.EdgeErrorCode.InvalidCost,
  encryptionDataMissing: edge.EdgeErrorCode.EncryptionDataMissing,
};

const precedences: Record<number, TerminatorPrecedence> = {
  [edge.TerminatorPrecedence.Default]: 'default',
  [edge.TerminatorPrecedence.Required]: 'required',
  [edge.TerminatorPrecedence.Failed]: 'failed',
};

const bindResults = {
  invalidSession: edge.CreateTerminatorResult.FailedInvalidSession,
  idConflict: edge.CreateTerminatorResult.FailedIdConflict,
  other: edge.CreateTerminatorResult.FailedOther,
} as const;

export interface RouterMessageDeps {
  terminators: Terminators;
  circuits: Circuits;
  apiSessions: ApiSessionSync;
  peers: RouterPeers;
  logger: Logger;
}

/**
 * What a router asks of the controller, decoded, handed to the domain, and answered as the
 * reference answers (ROUTER-FACTS §3). A message of a known type that does not decode closes the
 * channel (`ChannelProtocolError` from the codec); types this controller has nothing to do with
 * (metrics, traces) are taken and dropped, as the reference's channel drops a type it has no
 * handler for.
 */
export class RouterMessages {
  private readonly ignored = new Set<number>();

  constructor(private readonly deps: RouterMessageDeps) {}

  async handle(link: ChannelRouterLink, msg: ChannelMessage): Promise<void> {
    switch (msg.contentType) {
      case edge.ContentType.CreateCircuitV2RequestType:
        return this.dial(link, msg);
      case edge.ContentType.CreateTerminatorV2RequestType:
        return this.bind(link, msg);
      case ctrl.ContentType.RemoveTerminatorsRequestType: {
        const req = ctrl.RemoveTerminatorsRequest.decode(msg.body);
        await this.deps.terminators.unbind(link, req.terminatorIds);
        link.reply(createResult(true, '', msg));
        return;
      }
      case edge.ContentType.RemoveTerminatorRequestType: {
        const req = edge.RemoveTerminatorRequest.decode(msg.body);
        await this.deps.terminators.unbind(link, [req.terminatorId]);
        link.reply(replyTo(createMessage(edge.ContentType.RemoveTerminatorResponseType), msg));
        return;
      }
      case CtrlMsgContentType.RouteResultType: {
        const result = decodeRouteResult(msg);
        if (!link.routeResult(result))
          this.deps.logger.debug({ routerId: link.routerId, circuitId: result.circuitId }, 'a late route result');
        return;
      }
      case ctrl.ContentType.FaultType:
        return this.fault(link, ctrl.Fault.decode(msg.body));
      case ctrl.ContentType.RouterLinksType: {
        const { links } = ctrl.RouterLinks.decode(msg.body);
        this.deps.peers.reported(
          link,
          links.map((l) => ({
            id: l.id,
            destRouterId: l.destRouterId,
            protocol: l.linkProtocol,
            dialAddress: l.dialAddress,
            iteration: l.iteration,
          })),
        );
        return;
      }
      case ctrl.ContentType.MetricsType: {
        // Advisory: metrics that do not decode are dropped, never a reason to close the channel.
        let metrics: ctrl.MetricsMessage;
        try {
          metrics = ctrl.MetricsMessage.decode(msg.body);
        } catch (err) {
          this.deps.logger.debug({ routerId: link.routerId, err: describe(err) }, 'router metrics not read');
          return;
        }
        this.deps.peers.measured(link, metrics.histograms);
        return;
      }
      case ctrl.ContentType.LinkConnectedType: {
        // The pre-0.32 report of a dialled link: 1.1.9 routers report links with RouterLinks, which
        // the graph takes as connected at once, as the reference's does.
        const connected = ctrl.LinkConnected.decode(msg.body);
        this.deps.logger.debug({ routerId: link.routerId, linkId: connected.id }, 'a link-connected report');
        return;
      }
      case ctrl.ContentType.VerifyRouterType: {
        const req = ctrl.VerifyRouter.decode(msg.body);
        const verdict = await this.deps.peers.verify(req.routerId, req.fingerprints).catch((err: unknown) => ({
          verified: false as const,
          reason: `router ${req.routerId} could not be verified: ${describe(err)}`,
        }));
        if (!verdict.verified)
          this.deps.logger.warn(
            { routerId: link.routerId, peerId: req.routerId, reason: verdict.reason },
            'router verification failed',
          );
        link.reply(createResult(verdict.verified, verdict.verified ? 'router verified' : verdict.reason, msg));
        return;
      }
      case edge.ContentType.ApiSessionHeartbeatType: {
        const beat = edge.ApiSessionHeartbeat.decode(msg.body);
        await this.deps.apiSessions.heartbeat(link, beat.tokens);
        return;
      }
      case edge.ContentType.RequestClientReSyncType:
        edge.RequestClientReSync.decode(msg.body);
        this.deps.logger.info({ routerId: link.routerId }, 'the router asked for a resynchronisation');
        await this.deps.apiSessions.fullSync(link);
        return;
      case edge.ContentType.ClientHelloType:
        if (!link.clientHello(msg)) this.deps.logger.debug({ routerId: link.routerId }, 'an unexpected client hello');
        return;
      default:
        if (!this.ignored.has(msg.contentType)) {
          this.ignored.add(msg.contentType);
          this.deps.logger.debug({ contentType: msg.contentType }, 'a router message type this controller ignores');
        }
    }
  }

  private async dial(link: ChannelRouterLink, msg: ChannelMessage): Promise<void> {
    const req = decodeCreateCircuitV2Request(msg);
    const stop = routerEdgeMetrics().dialSeconds.startTimer();
    let outcome: DialOutcome;
    try {
      outcome = await this.deps.circuits.dial(link, {
        sessionToken: req.sessionToken,
        apiSessionToken: req.apiSessionToken,
        fingerprints: req.fingerprints,
        terminatorInstanceId: req.terminatorInstanceId,
        peerData: req.peerData,
      });
    } catch (err) {
      this.deps.logger.warn({ err, routerId: link.routerId }, 'a dial failed');
      outcome = { outcome: 'refused', refusal: { code: 'internal', message: describe(err) } };
    }
    stop();
    routerEdgeMetrics().dials.inc({ outcome: outcome.outcome === 'routed' ? 'routed' : outcome.refusal.code });
    if (outcome.outcome === 'refused') {
      link.reply(
        encodeEdgeError({ message: outcome.refusal.message, errorCode: errorCodes[outcome.refusal.code] }, msg),
      );
      return;
    }
    link.reply(
      encodeCreateCircuitV2Response(
        {
          circuitId: outcome.circuitId,
          address: outcome.address,
          peerData: outcome.peerData,
          tags: new Map(Object.entries(outcome.tags)),
        },
        msg,
      ),
    );
  }

  private async bind(link: ChannelRouterLink, msg: ChannelMessage): Promise<void> {
    const req = edge.CreateTerminatorV2Request.decode(msg.body);
    const precedence = precedences[req.precedence];
    let response: edge.CreateTerminatorV2Response;
    if (!precedence) {
      response = {
        terminatorId: req.address,
        result: edge.CreateTerminatorResult.FailedOther,
        msg: `invalid precedence: ${req.precedence}`,
      };
    } else {
      try {
        const outcome = await this.deps.terminators.bind(link, {
          sessionToken: req.sessionToken,
          apiSessionToken: req.apiSessionToken,
          fingerprints: req.fingerprints,
          address: req.address,
          instanceId: req.instanceId,
          instanceSecret: req.instanceSecret,
          peerData: req.peerData,
          cost: req.cost,
          precedence,
        });
        response =
          outcome.outcome === 'bound'
            ? { terminatorId: outcome.terminatorId, result: edge.CreateTerminatorResult.Success, msg: '' }
            : { terminatorId: outcome.terminatorId, result: bindResults[outcome.result], msg: outcome.message };
      } catch (err) {
        this.deps.logger.warn({ err, routerId: link.routerId }, 'a bind failed');
        response = { terminatorId: req.address, result: edge.CreateTerminatorResult.FailedOther, msg: describe(err) };
      }
    }
    routerEdgeMetrics().binds.inc({
      outcome: response.result === edge.CreateTerminatorResult.Success ? 'bound' : `failed-${response.result}`,
    });
    link.reply(protoMessage(edge.CreateTerminatorV2Response, response, { replyFor: msg.sequence }));
  }

  private async fault(link: ChannelRouterLink, fault: ctrl.Fault): Promise<void> {
    switch (fault.subject) {
      case ctrl.FaultSubject.IngressFault:
      case ctrl.FaultSubject.EgressFault:
      case ctrl.FaultSubject.ForwardFault:
      case ctrl.FaultSubject.UnknownOwnerForwardFault: {
        const ids = fault.id
          .split(' ')
          .flatMap((s) => s.split(','))
          .map((s) => s.trim())
          .filter((s) => s !== '');
        await this.deps.circuits.faulted(ids);
        return;
      }
      case ctrl.FaultSubject.LinkFault:
      case ctrl.FaultSubject.LinkDuplicate:
        this.deps.peers.faulted(link, fault.id, fault.iteration);
        return;
      default:
        this.deps.logger.debug({ routerId: link.routerId, subject: fault.subject }, 'a fault this controller ignores');
    }
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
