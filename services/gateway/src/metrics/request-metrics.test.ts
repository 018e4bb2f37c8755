import { metricsRegistry } from '@ziti/platform';
import { describe, expect, it } from 'vitest';
import { recordGatewayRequest } from './request-metrics.transport.ts';

async function values(name: string) {
  const metric = metricsRegistry.getSingleMetric(name);
  return metric ? (await metric.get()).values : [];
}

describe('gateway request metrics', () => {
  it('labels a request by its operation and status, unmatched ones as unmatched, and observes seconds', async () => {
    recordGatewayRequest({ api: 'management', operationId: 'listIdentities' }, 200, 0.004);
    recordGatewayRequest({ api: 'management', operationId: 'listIdentities' }, 401, 0.001);
    recordGatewayRequest({ api: 'client', operationId: 'listIdentities' }, 200, 0.3);
    recordGatewayRequest(undefined, 404, 0.0005);
    recordGatewayRequest(undefined, 404, -1);

    const counts = await values('ziti_http_requests_total');
    const count = (operation: string, status: string) =>
      counts.find((v) => v.labels.operation === operation && v.labels.status === status)?.value;
    expect(count('management.listIdentities', '200')).toBe(1);
    expect(count('management.listIdentities', '401')).toBe(1);
    expect(count('client.listIdentities', '200')).toBe(1);
    expect(count('unmatched', '404')).toBe(2);

    const latency = await values('ziti_http_request_duration_seconds');
    const of = (operation: string, metricName: string) =>
      latency.find((v) => v.labels.operation === operation && (v as { metricName?: string }).metricName === metricName)
        ?.value;
    expect(of('management.listIdentities', 'ziti_http_request_duration_seconds_count')).toBe(2);
    expect(of('client.listIdentities', 'ziti_http_request_duration_seconds_sum')).toBeCloseTo(0.3);
    // A clock that went backwards counts as 0 s, never as a negative observation.
    expect(of('unmatched', 'ziti_http_request_duration_seconds_sum')).toBeCloseTo(0.0005);
  });
});
