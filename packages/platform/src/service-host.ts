import { type Server, createServer } from 'node:http';
import type { Logger } from './logger.ts';
import { renderMetrics } from './metrics.ts';

/** What a composition root hands to the host: start, readiness and an orderly stop. */
export interface RunnableService {
  name: string;
  start(): Promise<void>;
  /** Dependencies reachable and migrations applied. */
  ready(): Promise<boolean>;
  stop(): Promise<void>;
}

/**
 * Runs a service as a process: starts it, serves `/healthz`, `/readyz` and the process's Prometheus
 * `/metrics` on `healthPort` (0 = off), and stops it gracefully on SIGTERM/SIGINT (stop taking
 * work, finish what is in flight, close).
 */
export async function runProcess(service: RunnableService, logger: Logger, healthPort: number): Promise<void> {
  let health: Server | undefined;
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    const force = setTimeout(() => {
      logger.error('graceful stop took too long; exiting');
      process.exit(1);
    }, 20_000);
    force.unref();
    try {
      await service.stop();
      health?.close();
      logger.info('stopped');
      process.exit(0);
    } catch (err) {
      logger.error({ err }, 'error while stopping');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  if (healthPort > 0) {
    health = createServer((req, res) => {
      if (req.url === '/healthz') {
        res.writeHead(stopping ? 503 : 200).end(stopping ? 'stopping' : 'ok');
        return;
      }
      if (req.url === '/readyz') {
        service.ready().then(
          (ok) => res.writeHead(ok && !stopping ? 200 : 503).end(ok ? 'ready' : 'not ready'),
          () => res.writeHead(503).end('not ready'),
        );
        return;
      }
      if (req.url === '/metrics' && (req.method === 'GET' || req.method === 'HEAD')) {
        renderMetrics().then(
          ({ contentType, body }) => res.writeHead(200, { 'content-type': contentType }).end(body),
          (err: unknown) => {
            logger.warn({ err }, 'metrics could not be collected');
            res.writeHead(500).end('metrics could not be collected');
          },
        );
        return;
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => health!.listen(healthPort, process.env.HEALTH_BIND ?? '127.0.0.1', resolve));
  }
  try {
    await service.start();
    logger.info('started');
  } catch (err) {
    logger.fatal({ err }, 'failed to start');
    process.exit(1);
  }
}
