import { afterAll, beforeAll, expect, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import { waitFor } from '../support/infra.ts';
import {
  type EdgeAdmin,
  type StartedRouter,
  type ZitiPeers,
  type ZitiProcess,
  adminLogin,
  createZitiPeers,
  describeWithZiti,
} from '../support/ziti-peers.ts';

/**
 * Real OpenZiti 1.1.9 routers and SDKs against this controller, on the cluster (each service its own
 * process on NATS, Redis and Postgres): an edge router enrolled here comes online with its URLs,
 * `ziti tunnel host` binds a service through it, `ziti demo zcat` dials it and bytes go through and
 * back; then the router's death, return and re-enrollment, a removed Dial policy, a disabled
 * dialling identity and a logged-out host are each seen by the programs (ROUTER-FACTS §4).
 * Skips with one line when `ziti` v1.1.9 is not found.
 */
describeWithZiti('real routers (OpenZiti 1.1.9) on the cluster', (ziti) => {
  let e: E2e;
  let peers: ZitiPeers;
  let admin: EdgeAdmin;
  let ctrlEndpoint: string;

  beforeAll(async () => {
    e = await startE2e();
    peers = createZitiPeers({ ziti: ziti.path, prefix: 'routers-real' });
    admin = await adminLogin(e.cluster.baseUrl, e.cluster.adminUsername, e.cluster.adminPassword, {
      ca: e.caPems.join(''),
    });
    ctrlEndpoint = `tls:127.0.0.1:${e.cluster.ctrlPorts()[0]!.port}`;
  });

  afterAll(async () => {
    await peers?.cleanup();
    await e?.stop();
  });

  const mgmt = (path: string, init: Record<string, unknown> = {}) =>
    e.call('management', { path, token: e.adminToken, ...init });

  let router: StartedRouter;
  let tunnel: ZitiProcess;
  let hostFile: string;
  let clientFile: string;
  let serviceName: string;
  let serviceId: string;
  let clientId: string;
  let hostId: string;

  it('an enrolled router comes online with its URLs, a tunneler binds a service through it and zcat echoes', async () => {
    router = await peers.startRouter(admin, { ctrlEndpoint, roleAttributes: ['real'], onlineTimeoutMs: 30_000 });
    // Online from the edge hello; synchronised once every API session reached it.
    const detail = await waitFor(async () => {
      const res = await mgmt(`/edge-routers/${router.id}`);
      return res.json.data.syncStatus === 'SYNC_DONE' ? res : null;
    }, 'the router to be synchronised');
    expect(detail.json.data).toMatchObject({
      isOnline: true,
      hostname: '127.0.0.1',
      syncStatus: 'SYNC_DONE',
      supportedProtocols: { tls: `tls://127.0.0.1:${router.config.edgePort}` },
      versionInfo: { version: 'v1.1.9', os: 'linux' },
    });
    const [host, client] = await Promise.all([
      admin.createIdentity({ name: `real-host-${Date.now()}`, roleAttributes: ['hosts'] }),
      admin.createIdentity({ name: `real-client-${Date.now()}`, roleAttributes: ['clients'] }),
    ]);
    hostId = host.id;
    clientId = client.id;
    [hostFile, clientFile] = await Promise.all([
      peers.enrollIdentity(host.enrollmentJwt, { name: 'host', keyAlg: 'EC' }),
      peers.enrollIdentity(client.enrollmentJwt, { name: 'client', keyAlg: 'EC' }),
    ]);
    const echo = await peers.startEchoServer();
    const service = await admin.createHostedService({
      name: `real-echo-${Date.now()}`,
      target: { address: echo.host, port: echo.port },
      hostIdentityIds: [host.id],
      clientIdentityIds: [client.id],
      edgeRouterIds: [router.id],
    });
    serviceName = service.serviceName;
    serviceId = service.serviceId;
    tunnel = peers.runTunnelHost(hostFile, { name: 'tunnel-host' });
    const bound = await admin.waitForTerminator(serviceId, { processes: [tunnel, router.process], timeoutMs: 30_000 });
    expect(bound.terminators).toHaveLength(1);
    expect(bound.terminators[0]).toMatchObject({ routerId: router.id, binding: 'edge' });
    const line = `through a real router ${Date.now()}\n`;
    const echoed = await peers.zcat(clientFile, serviceName, line, { name: 'zcat-ok' });
    expect(echoed.stderr).toBe('');
    expect(echoed.code).toBe(0);
    expect(echoed.stdout.toString('utf8')).toBe(line);
  }, 120_000);
});
