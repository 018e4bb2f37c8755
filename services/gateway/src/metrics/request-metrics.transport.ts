import { observeHttpRequest } from '@ziti/platform';

/** The operation a request matched in the route table, or none (404/405, refused before routing). */
export interface MatchedOperation {
  api: string;
  operationId: string;
}

/**
 * Records one answered request at the gateway (`ziti_http_requests_total{operation,status}` and
 * `ziti_http_request_duration_seconds{operation}`): the pipeline calls it once per request when
 * its answer is finished. The operation label is `<api>.<operationId>` from the route table, or
 * `unmatched`, never the raw path, so the series stay bounded whatever clients send.
 */
export function recordGatewayRequest(operation: MatchedOperation | undefined, status: number, seconds: number): void {
  const label = operation ? `${operation.api}.${operation.operationId}` : 'unmatched';
  observeHttpRequest(label, status, Number.isFinite(seconds) && seconds >= 0 ? seconds : 0);
}
