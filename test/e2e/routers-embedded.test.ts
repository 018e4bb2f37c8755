import { type Server, type Socket, createServer } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Embedded, startEmbedded } from '../support/embedded.ts';
import { waitFor } from '../support/infra.ts';
import {
  type EdgeAdmin,
  type ZitiPeers,
  adminLogin,
  createZitiPeers,
  describeWithZiti,
} from '../support/ziti-peers.ts';

/**
 * Real OpenZiti 1.1.9 programs against `npm start`'s composition (every service in one process):
 * a router whose `ctrl.endpoint` is the API port (ALPN `ziti-ctrl`, as the reference's quickstart
 * serves it) comes online; a service hosted by `ziti tunnel host` carries a dial; while a circuit is
 * open its session's route path names the router, and `[]` once it closed, and the terminator's
 * `dynamicCost` is fabric's (the circuit's 2 while it is open); the terminator the router made is in
 * the audit trail.
 */
describeWithZiti('real routers on npm start', (ziti) => {
  let e: Embedded;
  let peers: ZitiPeers;
  let admin: EdgeAdmin;

  beforeAll(async () => {
    e = await startEmbedded();
    peers = createZitiPeers({ ziti: ziti.path, prefix: 'routers-embedded' });
    admin = await adminLogin(`https://127.0.0.1:${e.port}`, e.adminUsername, e.adminPassword, {
      ca: e.caPems.join(''),
    });
  });

  afterAll(async () => {
    await peers?.cleanup();
    await e?.stop();
  });

  const mgmt = (path: string) => e.call('management', { path, token: e.adminToken });

  it('a router on the API port carries a circuit; the route path shows it while it is open; the terminator is audited', async () => {
    const router = await peers.startRouter(admin, { ctrlEndpoint: `tls:127.0.0.1:${e.port}`, onlineTimeoutMs: 30_000 });
    expect((await mgmt(`/edge-routers/${router.id}`)).json.data).toMatchObject({ isOnline: true });
    const [host, client] = await Promise.all([
      admin.createIdentity({ name: `embedded-host-${Date.now()}` }),
      admin.createIdentity({ name: `embedded-client-${Date.now()}` }),
    ]);
    const [hostFile, clientFile] = await Promise.all([
      peers.enrollIdentity(host.enrollmentJwt, { name: 'host', keyAlg: 'EC' }),
      peers.enrollIdentity(client.enrollmentJwt, { name: 'client', keyAlg: 'EC' }),
    ]);
    // A target that keeps each connection open until told: the circuit lives as long as it does.
    const held = new Set<Socket>();
    const hold: Server = createServer({ allowHalfOpen: true }, (socket) => {
      held.add(socket);
      socket.on('data', (d) => socket.write(d));
      socket.on('error', () => socket.destroy());
    });
    await new Promise<void>((resolve) => hold.listen(0, '127.0.0.1', () => resolve()));
    const address = hold.address();
    const holdPort = typeof address === 'object' && address ? address.port : 0;
    try {
      const service = await admin.createHostedService({
        name: `embedded-hold-${Date.now()}`,
        target: { address: '127.0.0.1', port: holdPort },
        hostIdentityIds: [host.id],
        clientIdentityIds: [client.id],
        edgeRouterIds: [router.id],
      });
      const tunnel = peers.runTunnelHost(hostFile, { name: 'tunnel-host' });
      const bound = await admin.waitForTerminator(service.serviceId, {
        processes: [tunnel, router.process],
        timeoutMs: 30_000,
      });
      const terminatorId = bound.terminators[0]!.id;
      const audited = await waitFor(async () => {
        const res = await mgmt(
          `/extensions/audit-records?filter=${encodeURIComponent(`entityId = "${terminatorId}"`)}`,
        );
        return res.status === 200 && res.json.data.length > 0 ? res.json.data : null;
      }, 'the terminator in the audit trail');
      // Made on behalf of the hosting identity, through the router's control channel.
      expect(audited[0]).toMatchObject({
        entityType: 'terminators',
        action: 'created',
        actorId: host.id,
        operation: 'ctrl.createTerminatorV2',
      });

      // zcat's stdin ends at once; the target keeps its side open, so the circuit stays up.
      const line = `held open ${Date.now()}\n`;
      const dialing = peers.zcat(clientFile, service.serviceName, line, { name: 'zcat-held', timeoutMs: 60_000 });
      const sessionId = await waitFor(async () => {
        const res = await mgmt(
          `/sessions?filter=${encodeURIComponent(`service = "${service.serviceId}" and type = "Dial"`)}`,
        );
        return res.json.data[0]?.id as string | undefined;
      }, 'the Dial session');
      await waitFor(async () => {
        const path = await mgmt(`/sessions/${sessionId}/route-path`);
        return path.status === 200 && path.json.data.routePath.includes(router.id);
      }, 'the route path to name the router while the circuit is open');
      expect(held.size).toBe(1);
      // dynamicCost is fabric's: 0 before any dial, then the open circuit's 2 (more if an attempt
      // failed), and 2 less once it closed.
      expect(bound.terminators[0]!.dynamicCost).toBe(0);
      const dynamicCost = async () => {
        const [detail, list, ofService] = await Promise.all([
          mgmt(`/terminators/${terminatorId}`),
          mgmt(`/terminators?filter=${encodeURIComponent(`id = "${terminatorId}"`)}`),
          mgmt(`/services/${service.serviceId}/terminators`),
        ]);
        const listed = [list.json.data[0]?.dynamicCost, ofService.json.data[0]?.dynamicCost];
        expect(listed).toEqual([detail.json.data.dynamicCost, detail.json.data.dynamicCost]);
        return detail.json.data.dynamicCost as number;
      };
      const whileOpen = await dynamicCost();
      expect(whileOpen).toBeGreaterThanOrEqual(2);
      for (const s of held) s.end();
      const done = await dialing;
      expect(done.code, done.stderr).toBe(0);
      expect(done.stdout.toString('utf8')).toBe(line);
      await waitFor(async () => {
        const path = await mgmt(`/sessions/${sessionId}/route-path`);
        return path.status === 200 && path.json.data.routePath.length === 0;
      }, 'the route path to be empty once the circuit closed');
      await waitFor(async () => (await dynamicCost()) <= whileOpen - 2, "the closed circuit's cost to be taken away");
    } finally {
      for (const s of held) s.destroy();
      hold.close();
    }
  }, 180_000);
});
