import { type Server, type Socket, createServer } from 'node:net';
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
 * Three real OpenZiti 1.1.9 routers linked in a line, A–B–C, on the cluster (issue 34): link groups
 * let A dial only B and B only C. The host binds on C, the client may use only A, so a dial crosses
 * both links: the controller told the routers of each other (PeerStateChanges), took the links they
 * reported (RouterLinks), answered B's and C's VerifyRouter, and routed the circuit A → B → C. With B
 * killed, its open circuit ends and a dial fails cleanly (no path); a router D linked A–D–C then
 * carries new dials around it; with B back, the routers link again and dials go through.
 * Skips with one line when `ziti` v1.1.9 is not found.
 */
describeWithZiti('three real routers linked in a line (OpenZiti 1.1.9) on the cluster', (ziti) => {
  let e: E2e;
  let peers: ZitiPeers;
  let admin: EdgeAdmin;
  let a: StartedRouter;
  let b: StartedRouter;
  let c: StartedRouter;
  let tunnel: ZitiProcess;
  let clientFile: string;
  let serviceName: string;
  let serviceId: string;
  const held = new Set<Socket>();
  let holding = false;
  let hold: Server | undefined;

  beforeAll(async () => {
    e = await startE2e();
    peers = createZitiPeers({ ziti: ziti.path, prefix: 'router-links' });
    admin = await adminLogin(e.cluster.baseUrl, e.cluster.adminUsername, e.cluster.adminPassword, {
      ca: e.caPems.join(''),
    });
  });

  afterAll(async () => {
    for (const s of held) s.destroy();
    hold?.close();
    await peers?.cleanup();
    await e?.stop();
  });

  const mgmt = (path: string) => e.call('management', { path, token: e.adminToken });

  /**
   * The Dial session of the service whose circuit is open now, with its route path (each zcat logs
   * in anew, so it is the one session with a path); null while there is none.
   */
  const openCircuit = async () => {
    const res = await mgmt(`/sessions?filter=${encodeURIComponent(`service = "${serviceId}" and type = "Dial"`)}`);
    for (const session of res.json.data as { id: string }[]) {
      const route = await mgmt(`/sessions/${session.id}/route-path`);
      if (route.status === 200 && route.json.data.routePath.length > 0)
        return { sessionId: session.id, path: route.json.data.routePath as string[] };
    }
    return null;
  };

  /** One dial that must echo its line back; a string says why it did not. */
  const dialEchoes = (name: string) => peers.zcatEchoes(clientFile, serviceName, { name, timeoutMs: 30_000 });

  it('a dial on A reaches the host on C over the links A–B and B–C; the route path names all three', async () => {
    const ctrlEndpoint = `tls:127.0.0.1:${e.cluster.ctrlPorts()[0]!.port}`;
    // B listens for A's group and dials C's; C listens for B's and dials no one; A only dials.
    b = await peers.startRouter(admin, {
      ctrlEndpoint,
      name: `line-b-${Date.now()}`,
      linkListener: true,
      linkGroups: { listener: ['ab'], dialer: ['bc'] },
      metricsReportInterval: '2s',
      onlineTimeoutMs: 30_000,
    });
    c = await peers.startRouter(admin, {
      ctrlEndpoint,
      name: `line-c-${Date.now()}`,
      linkListener: true,
      linkGroups: { listener: ['bc'], dialer: ['none'] },
      onlineTimeoutMs: 30_000,
    });
    a = await peers.startRouter(admin, {
      ctrlEndpoint,
      name: `line-a-${Date.now()}`,
      linkGroups: { dialer: ['ab'] },
      metricsReportInterval: '2s',
      onlineTimeoutMs: 30_000,
    });
    const [host, client] = await Promise.all([
      admin.createIdentity({ name: `line-host-${Date.now()}` }),
      admin.createIdentity({ name: `line-client-${Date.now()}` }),
    ]);
    const [hostFile, clientIdentityFile] = await Promise.all([
      peers.enrollIdentity(host.enrollmentJwt, { name: 'host', keyAlg: 'EC' }),
      peers.enrollIdentity(client.enrollmentJwt, { name: 'client', keyAlg: 'EC' }),
    ]);
    clientFile = clientIdentityFile;
    // Echoes, and keeps each connection open until told: a circuit lives as long as it does.
    hold = createServer({ allowHalfOpen: true }, (socket) => {
      held.add(socket);
      socket.on('data', (d) => socket.write(d));
      // Half-close aware (zcat exits once the far side ends) unless told to hold the circuit open.
      socket.on('end', () => {
        if (!holding) socket.end();
      });
      socket.on('close', () => held.delete(socket));
      socket.on('error', () => socket.destroy());
    });
    await new Promise<void>((resolve) => hold!.listen(0, '127.0.0.1', () => resolve()));
    const address = hold.address();
    const service = await admin.createHostedService({
      name: `line-echo-${Date.now()}`,
      target: { address: '127.0.0.1', port: typeof address === 'object' && address ? address.port : 0 },
      hostIdentityIds: [host.id],
      clientIdentityIds: [client.id],
      edgeRouterIds: [c.id],
      clientEdgeRouterIds: [a.id],
    });
    serviceName = service.serviceName;
    serviceId = service.serviceId;
    tunnel = peers.runTunnelHost(hostFile, { name: 'tunnel-host' });
    const bound = await admin.waitForTerminator(serviceId, {
      processes: [tunnel, c.process],
      timeoutMs: 30_000,
    });
    expect(bound.terminators).toHaveLength(1);
    expect(bound.terminators[0]).toMatchObject({ routerId: c.id });

    // The routers link on their own once told of each other: the first dial that echoes proves both links.
    await waitFor(
      async () => ((await dialEchoes('zcat-line')) === true ? true : null),
      'a dial over A–B–C',
      90_000,
      500,
    );

    // While a circuit is open its route path is the line, in order.
    holding = true;
    const line = `held open ${Date.now()}\n`;
    const dialing = peers.zcat(clientFile, serviceName, line, { name: 'zcat-held', timeoutMs: 60_000 });
    const { path } = await waitFor(openCircuit, 'the route path while the circuit is open');
    expect(path).toEqual([a.id, b.id, c.id]);
    // The controller knows both links, and their latency once the routers' metrics measured them.
    const fabricHealth = e.cluster.processes().find((p) => p.service === 'fabric')!.healthPort;
    await waitFor(
      async () => {
        const metrics = await (await fetch(`http://127.0.0.1:${fabricHealth}/metrics`)).text();
        return /^ziti_router_links 2$/m.test(metrics) && /^ziti_router_links_measured 2$/m.test(metrics);
      },
      'both links, measured, in fabric metrics',
      20_000,
      250,
    );
    await waitFor(async () => (held.size > 0 ? true : null), 'the held connection at the target');
    holding = false;
    for (const s of held) s.end();
    const done = await dialing;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout.toString('utf8')).toBe(line);
  }, 300_000);

  it('with the middle router killed its circuits end and a dial fails cleanly, then takes another path when one comes; when B returns dials go through it again', async () => {
    // A circuit open over the line when B dies ends with it: the controller drops it and the dialler sees it close.
    holding = true;
    const dialing = peers.zcat(clientFile, serviceName, 'over B\n', { name: 'zcat-cut', timeoutMs: 60_000 });
    const { sessionId } = await waitFor(openCircuit, 'the circuit over B to be open');
    await b.process.kill('SIGKILL');
    await admin.waitForRouterOnline(b.id, false, { timeoutMs: 30_000 });
    await waitFor(async () => {
      const route = await mgmt(`/sessions/${sessionId}/route-path`);
      return route.status === 200 && route.json.data.routePath.length === 0;
    }, 'the circuit over the dead router to be gone');
    const cut = await dialing;
    expect(cut.timedOut).toBe(false);
    holding = false;

    const refused = await peers.zcat(clientFile, serviceName, 'x\n', { name: 'zcat-no-path', timeoutMs: 30_000 });
    expect(refused.timedOut).toBe(false);
    expect(refused.code).not.toBe(0);
    expect(refused.stdout.toString('utf8')).toBe('');
    // The controller's answer, as the reference words it: no path from A to the host's router.
    expect(refused.stderr).toContain(`can't route from ${a.id} -\\u003e ${c.id}`);

    // Another way around, A–D–C: new dials take it while B is down.
    const d = await peers.startRouter(admin, {
      ctrlEndpoint: `tls:127.0.0.1:${e.cluster.ctrlPorts()[0]!.port}`,
      name: `line-d-${Date.now()}`,
      linkListener: true,
      linkGroups: { listener: ['ab'], dialer: ['bc'] },
      onlineTimeoutMs: 30_000,
    });
    // A transit router needs no policy: only the dialler's and the host's routers do.
    holding = true;
    const around = peers.zcat(clientFile, serviceName, 'around\n', { name: 'zcat-around', timeoutMs: 60_000 });
    const { path: aroundPath } = await waitFor(openCircuit, 'a circuit around B, over D', 90_000, 500);
    expect(aroundPath).toEqual([a.id, d.id, c.id]);
    holding = false;
    for (const s of held) s.end();
    expect((await around).code).toBe(0);
    await d.process.kill('SIGKILL');
    await admin.waitForRouterOnline(d.id, false, { timeoutMs: 30_000 });

    const back = peers.runRouter(b.config, { name: 'router-b-again' });
    await admin.waitForRouterOnline(b.id, true, { timeoutMs: 30_000, processes: [back] });
    await waitFor(
      async () => ((await dialEchoes('zcat-after')) === true ? true : null),
      'a dial once B is back',
      90_000,
      500,
    );
  }, 300_000);
});
