import { createAuditService } from '@ziti/audit/app';
import { readAuditConfig } from '@ziti/audit/config';
import { createAuthService } from '@ziti/auth/app';
import { readAuthConfig } from '@ziti/auth/config';
import { createGateway } from '@ziti/gateway/app';
import { type GatewayConfig, readGatewayConfig } from '@ziti/gateway/config';
import { createInventoryService } from '@ziti/inventory/app';
import { createPkiService } from '@ziti/pki-enrollment/app';
import { readPkiConfig } from '@ziti/pki-enrollment/config';
import {
  type Database,
  InProcessBus,
  type Logger,
  MemoryApiSessionStore,
  type RunnableService,
  serviceLogger,
  watchApiSessions,
} from '@ziti/platform';
import { createPolicyService } from '@ziti/policy/app';
import { type FabricService, createFabricService } from '@ziti/fabric/app';
import { type FabricConfig, readFabricConfig } from '@ziti/fabric/config';
import { MemoryCircuitStore } from '@ziti/fabric/circuits/memory-circuit.store';

/**
 * The whole controller in one process (`npm start`, and the embedded tests): the same composition
 * roots as the cluster, with one database per service from `database`, the in-process bus and
 * in-memory API sessions. Events are held until every service has registered its consumers.
 */
export async function composeEmbedded(o: {
  env: NodeJS.ProcessEnv;
  logger: Logger;
  database: (service: 'pki' | 'auth' | 'policy' | 'inventory' | 'audit') => Promise<Database>;
}): Promise<{
  controller: RunnableService;
  gatewayConfig: GatewayConfig;
  fabricConfig: FabricConfig;
  fabric: FabricService;
}> {
  const bus = new InProcessBus({ holdEvents: true, logger: serviceLogger(o.logger, 'bus') });
  const sessions = new MemoryApiSessionStore();
  let unwatchSessions: (() => void) | undefined;
  const log = (service: string) => serviceLogger(o.logger, service);
  const gatewayConfig = readGatewayConfig(o.env);
  const auditConfig = readAuditConfig(o.env);
  const [pki, auth, policy, inventory, audit] = await openAll(o.database, [
    'pki',
    'auth',
    'policy',
    'inventory',
    'audit',
  ]);
  const auditService = createAuditService({
    config: auditConfig,
    database: audit,
    bus,
    logger: log('audit'),
    ownsBus: false,
    awaitFirstResyncs: true,
  });
  const services: RunnableService[] = [
    createPkiService({
      config: readPkiConfig(o.env),
      database: pki,
      bus,
      logger: log('pki-enrollment'),
      ownsBus: false,
    }),
    createAuthService({
      config: readAuthConfig(o.env),
      database: auth,
      bus,
      sessions,
      logger: log('auth'),
      ownsBus: false,
    }),
    createPolicyService({ database: policy, bus, logger: log('policy'), ownsBus: false }),
    createInventoryService({ database: inventory, bus, logger: log('inventory'), ownsBus: false }),
    // Last to start: its first resyncs ask the four owners for their positions and states, and it is live once they
    // are done. It stops after them (see `stop`).
    auditService,
  ];
  // The router edge: routers' control channels on its own port, and on the API port (ALPN
  // `ziti-ctrl`, as the reference's quickstart); circuits kept in this process.
  const fabricConfig = readFabricConfig(o.env);
  const fabric = createFabricService({
    config: fabricConfig,
    bus,
    circuits: new MemoryCircuitStore(),
    logger: log('fabric'),
    ownsBus: false,
  });
  const gateway = createGateway({
    config: gatewayConfig,
    bus,
    sessions,
    logger: log('gateway'),
    controlChannel: (socket) => {
      const listener = fabric.listener();
      if (listener) listener.accept(socket);
      else socket.destroy();
    },
  });
  const started: RunnableService[] = [];
  const stop = async () => {
    // In reverse start order, but audit after the entity owners: what they publish while stopping (auth's
    // last batch of attempts) still reaches the trail.
    const order = [...started].reverse().sort((a, b) => Number(a === auditService) - Number(b === auditService));
    for (const s of order) await s.stop().catch((err) => o.logger.error({ err }, 'stop failed'));
    started.length = 0;
    unwatchSessions?.();
    unwatchSessions = undefined;
    await bus.close();
  };
  const controller: RunnableService = {
    name: 'controller',
    async start() {
      try {
        for (const s of services) {
          await s.start();
          started.push(s);
        }
        bus.openEvents();
        await gateway.start();
        started.push(gateway);
        await fabric.start();
        started.push(fabric);
        unwatchSessions = watchApiSessions(sessions);
      } catch (err) {
        await stop();
        throw err;
      }
    },
    async ready() {
      return (await Promise.all([...services, gateway, fabric].map((s) => s.ready()))).every(Boolean);
    },
    stop,
  };
  return { controller, gatewayConfig, fabricConfig, fabric };
}

/**
 * Opens the databases at once (each is its own PGlite, its own connection and data directory, so
 * they share nothing; opening them one after the other only added up their start-up). If one
 * fails, the others are closed again.
 */
async function openAll<const T extends readonly string[]>(
  open: (name: T[number]) => Promise<Database>,
  names: T,
): Promise<{ -readonly [K in keyof T]: Database }> {
  const opened = await Promise.allSettled(names.map((n) => open(n)));
  const failed = opened.find((r) => r.status === 'rejected');
  if (!failed)
    return opened.map((r) => (r as PromiseFulfilledResult<Database>).value) as { -readonly [K in keyof T]: Database };
  await Promise.all(opened.map((r) => (r.status === 'fulfilled' ? r.value.close().catch(() => undefined) : undefined)));
  throw failed.reason;
}
