import { eventStream } from '@ziti/contracts';
import { type NatsConnection, NatsError, connect } from 'nats';

/** The JetStream stream of the cluster's events, as `NatsBus` names it (namespace: `ZITI_BUS_NAMESPACE`). */
export function eventStreamName(namespace: string): string {
  return namespace ? `${eventStream.name}_${namespace.replace(/[^A-Za-z0-9_-]/g, '_')}` : eventStream.name;
}

/** A connection that gives up at once when the server does not answer (no reconnect loop). */
export async function connectNats(url: string, timeoutMs = 5_000): Promise<NatsConnection> {
  return connect({
    servers: url,
    name: 'ziti-edge-ops',
    timeout: timeoutMs,
    maxReconnectAttempts: 0,
    noAsyncTraces: true,
  });
}

/** The event stream's state: absent, or how many events it holds. */
export async function eventStreamState(
  nc: NatsConnection,
  namespace: string,
): Promise<{ name: string; exists: false } | { name: string; exists: true; messages: number; lastSequence: number }> {
  const name = eventStreamName(namespace);
  const jsm = await nc.jetstreamManager({ timeout: 5_000 });
  try {
    const info = await jsm.streams.info(name);
    return { name, exists: true, messages: info.state.messages, lastSequence: info.state.last_seq };
  } catch (err) {
    if (err instanceof NatsError && (err.api_error?.err_code === 10059 || err.code === '404'))
      return { name, exists: false };
    throw err;
  }
}
