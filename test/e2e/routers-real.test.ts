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
  let dialPolicyId: string;
  let dialPolicyBody: Record<string, unknown>;

  const terminatorsOf = async (id: string) =>
    (await mgmt(`/terminators?filter=${encodeURIComponent(`service = "${id}"`)}`)).json.data as {
      id: string;
      routerId: string;
    }[];
  /** A dial that echoes `input` back, through the real router. */
  const dialEchoes = (name: string) => peers.zcatEchoes(clientFile, serviceName, { name });
  const dialFails = async (name: string) => {
    const r = await peers.zcat(clientFile, serviceName, 'x\n', { name, timeoutMs: 30_000 });
    expect(r.code, `${name} should have failed`).not.toBe(0);
    expect(r.timedOut).toBe(false);
    return r.stderr;
  };

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
    clientId = client.id;
    hostId = host.id;
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
    dialPolicyId = service.dialPolicyId;
    dialPolicyBody = {
      name: `${serviceName}.dial`,
      type: 'Dial',
      semantic: 'AnyOf',
      identityRoles: [`@${client.id}`],
      serviceRoles: [`@${serviceId}`],
    };
    tunnel = peers.runTunnelHost(hostFile, { name: 'tunnel-host' });
    const bound = await admin.waitForTerminator(serviceId, { processes: [tunnel, router.process], timeoutMs: 30_000 });
    expect(bound.terminators).toHaveLength(1);
    expect(bound.terminators[0]).toMatchObject({ routerId: router.id, binding: 'edge' });
    const line = `through a real router ${Date.now()}\n`;
    const echoed = await peers.zcat(clientFile, serviceName, line, { name: 'zcat-ok' });
    expect(echoed.stderr).toBe('');
    expect(echoed.code).toBe(0);
    expect(echoed.stdout.toString('utf8')).toBe(line);
    // The client's view of the router: online, with the URL it dials.
    const sessions = await mgmt(`/sessions?filter=${encodeURIComponent(`service = "${serviceId}"`)}`);
    expect(sessions.status).toBe(200);
    const edgeRouters = sessions.json.data.flatMap((x: { edgeRouters: unknown[] }) => x.edgeRouters);
    expect(edgeRouters).toContainEqual(
      expect.objectContaining({
        isOnline: true,
        urls: { tls: `tls://127.0.0.1:${router.config.edgePort}` },
        supportedProtocols: { tls: `tls://127.0.0.1:${router.config.edgePort}` },
      }),
    );
    // fabric's metrics count the router it holds and the dial it routed.
    const fabricHealth = e.cluster.processes().find((p) => p.service === 'fabric')!.healthPort;
    const metrics = await (await fetch(`http://127.0.0.1:${fabricHealth}/metrics`)).text();
    expect(metrics).toMatch(/^ziti_routers_connected 1$/m);
    expect(metrics).toMatch(/^ziti_circuit_dials_total\{outcome="routed"\} [1-9]/m);
    expect(metrics).toMatch(/^ziti_terminator_binds_total\{outcome="bound"\} [1-9]/m);
    // The real CLI's policy advisor counts the common router online.
    await peers.run('cli-login', [
      'edge',
      'login',
      `127.0.0.1:${e.cluster.port}`,
      '-u',
      e.cluster.adminUsername,
      '-p',
      e.cluster.adminPassword,
      '-y',
    ]);
    const advisor = await peers.run('cli-policy-advisor', [
      'edge',
      'policy-advisor',
      'identities',
      clientId,
      serviceId,
    ]);
    expect(advisor.output).toMatch(/OKAY : \S+ \(1\) -> \S+ \(1\) Common Routers: \(1\/1\) Dial: Y Bind: N/);
    // The policy advisor counts the common router online.
    const advice = await mgmt(`/identities/${clientId}/policy-advice/${serviceId}`);
    expect(advice.json.data.commonRouters).toEqual([expect.objectContaining({ id: router.id, isOnline: true })]);
  }, 120_000);

  it('a removed Dial policy refuses new dials; restored, they work again', async () => {
    expect((await mgmt(`/service-policies/${dialPolicyId}`, { method: 'DELETE' })).status).toBe(200);
    expect(await dialFails('zcat-no-policy')).toMatch(/not found|invalid service/);
    const again = await mgmt('/service-policies', { method: 'POST', body: dialPolicyBody });
    expect(again.status).toBe(201);
    dialPolicyId = again.json.data.id;
    await waitFor(() => dialEchoes('zcat-policy-back').then((ok) => ok === true), 'dials to work again', 60_000, 1_000);
  }, 120_000);

  it('a disabled dialling identity cannot dial; enabled, it can', async () => {
    const disabled = await mgmt(`/identities/${clientId}/disable`, { method: 'POST', body: { durationMinutes: 0 } });
    expect(disabled.status).toBe(200);
    await dialFails('zcat-disabled');
    expect((await mgmt(`/identities/${clientId}/enable`, { method: 'POST' })).status).toBe(200);
    await waitFor(() => dialEchoes('zcat-enabled').then((ok) => ok === true), 'dials to work again', 60_000, 1_000);
  }, 120_000);

  it("the host's API session ended: the router drops it, its terminator goes, and the host binds anew", async () => {
    const [before] = await terminatorsOf(serviceId);
    expect(before).toBeDefined();
    const hostSessions = await mgmt(`/api-sessions?filter=${encodeURIComponent(`identity = "${hostId}"`)}`);
    expect(hostSessions.json.data.length).toBeGreaterThan(0);
    for (const s of hostSessions.json.data as { id: string }[])
      expect((await mgmt(`/api-sessions/${s.id}`, { method: 'DELETE' })).status).toBe(200);
    // The router closes the host's connections of that session: its terminator is removed.
    await waitFor(
      async () => !(await terminatorsOf(serviceId)).some((t) => t.id === before!.id),
      "the router to drop the host's terminator",
      30_000,
      250,
    );
    // The tunneler logs in again and binds with a new terminator; dials work.
    await waitFor(async () => (await terminatorsOf(serviceId)).length === 1, 'the host to bind again', 90_000, 500);
    await waitFor(() => dialEchoes('zcat-rebound').then((ok) => ok === true), 'dials to work again', 60_000, 1_000);
  }, 180_000);

  it('a killed router goes offline and dials fail; restarted, it is online and dials work', async () => {
    await router.process.kill('SIGKILL');
    await admin.waitForRouterOnline(router.id, false, { timeoutMs: 20_000 });
    const offline = await mgmt(`/edge-routers/${router.id}`);
    expect(offline.json.data).toMatchObject({ isOnline: false, hostname: '', supportedProtocols: {} });
    await dialFails('zcat-router-down');
    router = { ...router, process: peers.runRouter(router.config, { name: 'router-restarted' }) };
    await admin.waitForRouterOnline(router.id, true, { timeoutMs: 30_000, processes: [router.process] });
    // The host rebinds through the restarted router (the old terminator is gone: validated away).
    await waitFor(
      () => dialEchoes('zcat-router-back').then((ok) => ok === true),
      'dials through the restarted router',
      120_000,
      2_000,
    );
  }, 240_000);

  it('a re-enrolled router is disconnected at once and its reconnects are refused until it enrolls again', async () => {
    const reEnroll = await mgmt(`/edge-routers/${router.id}/re-enroll`, { method: 'POST' });
    expect(reEnroll.status).toBe(200);
    await admin.waitForRouterOnline(router.id, false, { timeoutMs: 10_000 });
    // The router keeps trying with its old certificate: refused every time, it stays offline.
    const logAt = router.process.logOffset();
    await router.process.waitForLog(/unable to connect controller|error connecting ctrl|EOF/, {
      from: logAt,
      timeoutMs: 30_000,
    });
    expect((await mgmt(`/edge-routers/${router.id}`)).json.data.isOnline).toBe(false);
    // Enrolled again (the new JWT), it comes back.
    await router.process.kill('SIGTERM');
    const jwt = (await mgmt(`/edge-routers/${router.id}`)).json.data.enrollmentJwt as string;
    await peers.enrollRouter(router.config, jwt);
    router = { ...router, process: peers.runRouter(router.config, { name: 'router-re-enrolled' }) };
    await admin.waitForRouterOnline(router.id, true, { timeoutMs: 30_000, processes: [router.process] });
    await waitFor(
      () => dialEchoes('zcat-re-enrolled').then((ok) => ok === true),
      'dials through the re-enrolled router',
      120_000,
      2_000,
    );
  }, 240_000);
});
