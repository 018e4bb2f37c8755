import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  type EdgeAdmin,
  type ReferenceController,
  type ZitiPeers,
  type ZitiProcess,
  createZitiPeers,
  describeWithZiti,
  formatLogLine,
  freePort,
  writeRouterConfig,
} from '../support/ziti-peers.ts';

/**
 * Proof of the test-peer harness (test/support/ziti-peers.ts) against the reference: the real
 * OpenZiti 1.1.9 controller, edge router, hosting SDK (`ziti tunnel host`) and dialing SDK (`ziti
 * demo zcat`), all on loopback in the run's own temp dir. A router is created, enrolled, run and
 * seen online; a service hosted by the tunneler in front of an echo server carries a line of bytes
 * there and back; the router is killed and seen offline. Every step is timed, and what the programs
 * did (log lines, Edge Client API calls) is printed: that is what a controller must reproduce for
 * them. Skips with one line when the binary is absent.
 */
describeWithZiti('reference peers (OpenZiti 1.1.9)', (ziti) => {
  let peers: ZitiPeers;
  let controller: ReferenceController;
  let admin: EdgeAdmin;
  const timings: [string, number][] = [];
  const notes: string[] = [];

  async function step<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const started = Date.now();
    try {
      return await fn();
    } finally {
      timings.push([name, Date.now() - started]);
    }
  }

  /** The log lines of `p` (from byte `from` on) matching `re`, formatted (at most `max`). */
  const grep = (p: ZitiProcess, re: RegExp, max = 40, from = 0) =>
    Buffer.from(p.logs())
      .subarray(from)
      .toString('utf8')
      .split('\n')
      .filter((l) => re.test(l))
      .slice(0, max)
      .map((l) => `    ${formatLogLine(l, 300)}`);

  beforeAll(async () => {
    peers = createZitiPeers({ ziti: ziti.path });
    controller = await step('controller: pki + config + edge init + run until /version answers', () =>
      peers.startReferenceController({ verbose: true }),
    );
    timings.push(
      ['  of which ziti pki create ca/intermediate/server/client', controller.timings.pkiMs],
      ['  of which ziti controller edge init', controller.timings.initMs],
      ['  of which ziti controller run until /version and ctrl port answer', controller.timings.runMs],
    );
    admin = await step('admin login (management API)', () => controller.login());
  });

  afterAll(async () => {
    await peers?.cleanup();
    const width = Math.max(...timings.map(([n]) => n.length));
    console.log(
      [
        '',
        'reference peers: timings',
        ...timings.map(([n, ms]) => `  ${n.padEnd(width)}  ${String(ms).padStart(6)} ms`),
        '',
        'reference peers: observed',
        ...notes,
      ].join('\n'),
    );
  });

  it('a router enrolls and comes online, a tunneler-hosted service echoes through it, and it goes offline when killed', async () => {
    // --- the router ---
    const created = await step('router: POST /edge-routers', () =>
      admin.createEdgeRouter({ roleAttributes: ['peers'] }),
    );
    const routerConfig = writeRouterConfig({
      ctrlEndpoint: controller.ctrlEndpoint,
      dir: peers.newDir('router'),
      edgePort: await freePort(),
      linkPort: await freePort(),
    });
    await step('router: ziti router enroll', () => peers.enrollRouter(routerConfig, created.enrollmentJwt));
    const router = peers.runRouter(routerConfig, { name: 'router', verbose: true });
    const online = await step('router: run until GET /edge-routers/<id> isOnline', () =>
      admin.waitForRouterOnline(created.id, true, { processes: [router], timeoutMs: 20_000 }),
    );
    expect(online.router.isOnline).toBe(true);
    notes.push(
      `router detail once online: ${JSON.stringify({
        isOnline: online.router.isOnline,
        isVerified: online.router.isVerified,
        hostname: online.router.hostname,
        supportedProtocols: online.router.supportedProtocols,
        syncStatus: online.router.syncStatus,
        version: online.router.versionInfo?.version,
        enrollmentJwt: online.router.enrollmentJwt ?? '(absent)',
      })}`,
      'router log on connect:',
      ...grep(
        router,
        /successfully connected|server hello|HelloHandler will contain|api session sync|synchronizing api sessions|heartbeat starting|created xgress listener|Xlink listener|error connecting/,
      ),
      'controller log on router connect:',
      ...grep(
        controller.process,
        /accepted new router connection|peer common name|broker detected edge router|edge router sent hello|sending edge router hello|final status/,
      ),
    );

    // --- identities, service, policies ---
    const [host, client] = await step('identities: POST /identities (ott) x2', () =>
      Promise.all([
        admin.createIdentity({ name: 'peers-host', roleAttributes: ['hosts'] }),
        admin.createIdentity({ name: 'peers-client', roleAttributes: ['clients'] }),
      ]),
    );
    const [hostFile, clientFile] = await step('identities: ziti edge enroll x2 (RSA 4096, in parallel)', () =>
      Promise.all([
        peers.enrollIdentity(host.enrollmentJwt, { name: 'host' }),
        peers.enrollIdentity(client.enrollmentJwt, { name: 'client' }),
      ]),
    );
    const echo = await peers.startEchoServer();
    const service = await step('service: host.v1 + intercept.v1 + service + 4 policies', () =>
      admin.createHostedService({
        name: 'peers-echo',
        target: { address: echo.host, port: echo.port },
        hostIdentityIds: [host.id],
        clientIdentityIds: [client.id],
        edgeRouterIds: [created.id],
      }),
    );

    // --- the hosting SDK, through the API recorder ---
    const recorderFor = (identityFile: string) =>
      peers.startApiRecorder({
        upstreamUrl: controller.apiUrl,
        upstreamCa: controller.caPem,
        serverCertPath: controller.serverCertPath,
        serverKeyPath: controller.serverKeyPath,
        identityFile,
      });
    const hostRecorder = await recorderFor(hostFile);
    const [routerAtBind, controllerAtBind] = [router.logOffset(), controller.process.logOffset()];
    const tunnel = peers.runTunnelHost(hostRecorder.identityFile, { name: 'tunnel-host', verbose: true });
    const bound = await step('tunnel host: start until GET /terminators shows one', () =>
      admin.waitForTerminator(service.serviceId, { processes: [tunnel, router], timeoutMs: 30_000 }),
    );
    expect(bound.terminators).toHaveLength(1);
    const terminator = bound.terminators[0]!;
    expect(terminator.routerId).toBe(created.id);
    expect(terminator.binding).toBe('edge');
    notes.push(
      `terminator: ${JSON.stringify({
        id: terminator.id,
        address: terminator.address,
        binding: terminator.binding,
        routerId: terminator.routerId,
        identity: terminator.identity,
        cost: terminator.cost,
        precedence: terminator.precedence,
      })}`,
      `tunnel host Edge Client API calls until bound (${hostRecorder.calls.length}):`,
      ...hostRecorder.summary().map((l) => `    ${l}`),
      'tunnel host log until bound:',
      ...grep(
        tunnel,
        /Hosting newly available service|hosting service|Bind session|connected in|establishing listener|listener established|failed/,
      ),
      'router log on bind:',
      ...grep(
        router,
        /accepting edge connection|establishing terminator|create terminator|terminator|Bind/,
        12,
        routerAtBind,
      ),
      'controller log on bind:',
      ...grep(controller.process, /terminator/i, 12, controllerAtBind),
    );

    // --- the dialing SDK ---
    const clientRecorder = await recorderFor(clientFile);
    const [routerAtDial, controllerAtDial] = [router.logOffset(), controller.process.logOffset()];
    const line = `hello through ziti ${Date.now()}\n`;
    const echoed = await step('zcat: dial, send a line, read it back, exit', () =>
      peers.zcat(clientRecorder.identityFile, service.serviceName, line, { verbose: true, name: 'zcat-ok' }),
    );
    expect(echoed.timedOut, echoed.stderr).toBe(false);
    expect(echoed.code, echoed.stderr).toBe(0);
    expect(echoed.stdout.toString('utf8')).toBe(line);
    expect(echo.connections).toBe(1);
    notes.push(
      `zcat success: exit ${echoed.code} in ${echoed.ms} ms, stdout = the input, stderr (-v) ${echoed.stderr.split('\n').filter(Boolean).length} lines, ending:`,
      ...echoed.stderr
        .split('\n')
        .filter(Boolean)
        .slice(-4)
        .map((l) => `    ${formatLogLine(l, 300)}`),
      `zcat Edge Client API calls (${clientRecorder.calls.length}):`,
      ...clientRecorder.summary().map((l) => `    ${l}`),
      'controller log on dial:',
      ...grep(
        controller.process,
        /selected terminator|route attempt|sent route message|created circuit|successful circuit setup|fault|removed circuit/i,
        12,
        controllerAtDial,
      ),
      'router log on dial:',
      ...grep(router, /circuit|route|dial|fault/i, 16, routerAtDial),
      'request and response bodies of the SDK calls (clipped):',
      ...[
        ...hostRecorder.calls.map((c) => ['host', c] as const),
        ...clientRecorder.calls.map((c) => ['zcat', c] as const),
      ]
        .filter(([, c]) => c.method === 'POST' || /service-updates|current-identity|controllers/.test(c.path))
        .map(
          ([who, c]) =>
            `    ${who} ${c.method} ${c.path.split('?')[0]}: request ${c.requestBody.slice(0, 400) || '(empty)'} → ${c.responseBody.slice(0, 700)}`,
        ),
    );

    // zcat without -v prints nothing on success; failures are one fatal JSON line on stderr, exit 1.
    const quiet = await step('zcat: again, not verbose', () =>
      peers.zcat(clientFile, service.serviceName, 'x\n', { name: 'zcat-quiet' }),
    );
    expect(quiet.stdout.toString()).toBe('x\n');
    const missing = await step('zcat: unknown service', () =>
      peers.zcat(clientFile, 'no-such-service', 'x\n', { name: 'zcat-missing' }),
    );
    expect(missing.code).toBe(1);
    notes.push(
      `zcat (not verbose) success: exit ${quiet.code}, stderr ${JSON.stringify(quiet.stderr)}`,
      `zcat unknown service: exit ${missing.code} in ${missing.ms} ms: ${formatLogLine(missing.stderr.trim(), 300)}`,
    );

    // --- loopback only ---
    const listening = peers.listeners();
    notes.push(
      'listening sockets of every process of the run:',
      ...listening.map((s) => `    ${s.command}[${s.pid}] ${s.protocol} ${s.address}:${s.port}`),
    );
    expect(listening.length).toBeGreaterThanOrEqual(4); // controller API + ctrl, router edge + link
    for (const s of listening)
      expect(`${s.command} ${s.protocol} ${s.address}`).toBe(`${s.command} ${s.protocol} 127.0.0.1`);

    // --- the router dies ---
    const controllerAtKill = controller.process.logOffset();
    await step('router: SIGKILL', () => router.kill('SIGKILL'));
    const offline = await step('router: killed until isOnline false', () =>
      admin.waitForRouterOnline(created.id, false, { timeoutMs: 20_000 }),
    );
    expect(offline.router.isOnline).toBe(false);
    const afterKill = await admin.listTerminators(service.serviceId);
    const down = await step('zcat: dial while the only router is down', () =>
      peers.zcat(clientFile, service.serviceName, 'x\n', { name: 'zcat-router-down', timeoutMs: 30_000 }),
    );
    expect(down.code).not.toBe(0);
    notes.push(
      `after the router's SIGKILL: isOnline false after ${offline.ms} ms; terminators of the service: ${afterKill.length}`,
      `zcat with the router down: exit ${down.code} in ${down.ms} ms: ${formatLogLine(down.stderr.trim().split('\n').pop() ?? '', 300)}`,
      'controller log on router loss:',
      ...grep(controller.process, /disconnect/, 6, controllerAtKill),
      `tunnel host Edge Client API calls in all (${hostRecorder.calls.length}):`,
      ...hostRecorder.summary().map((l) => `    ${l}`),
    );
  }, 180_000);
});
