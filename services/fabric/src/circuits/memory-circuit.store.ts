import type { CircuitRecord, CircuitStore } from './circuits.ports.ts';

/** The circuits of the one process of `npm start`. */
export class MemoryCircuitStore implements CircuitStore {
  private readonly circuits = new Map<string, CircuitRecord>();
  private readonly bySession = new Map<string, Set<string>>();
  private readonly byRouter = new Map<string, Set<string>>();

  async add(c: CircuitRecord): Promise<void> {
    this.circuits.set(c.id, structuredClone(c));
    index(this.bySession, c.sessionId, c.id);
    for (const r of new Set(c.path)) index(this.byRouter, r, c.id);
  }

  async remove(id: string): Promise<CircuitRecord | null> {
    const c = this.circuits.get(id);
    if (!c) return null;
    this.circuits.delete(id);
    unindex(this.bySession, c.sessionId, id);
    for (const r of new Set(c.path)) unindex(this.byRouter, r, id);
    return c;
  }

  async get(id: string): Promise<CircuitRecord | null> {
    const c = this.circuits.get(id);
    return c ? structuredClone(c) : null;
  }

  async ofRouter(routerId: string): Promise<CircuitRecord[]> {
    return [...(this.byRouter.get(routerId) ?? [])].map((id) => structuredClone(this.circuits.get(id)!));
  }

  async ofSessions(sessionIds: string[]): Promise<Map<string, CircuitRecord[]>> {
    const out = new Map<string, CircuitRecord[]>();
    for (const s of new Set(sessionIds)) {
      const ids = this.bySession.get(s);
      if (ids)
        out.set(
          s,
          [...ids].map((id) => structuredClone(this.circuits.get(id)!)),
        );
    }
    return out;
  }

  async count(): Promise<number> {
    return this.circuits.size;
  }

  async close(): Promise<void> {}
}

function index(map: Map<string, Set<string>>, key: string, id: string): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(id);
}

function unindex(map: Map<string, Set<string>>, key: string, id: string): void {
  const set = map.get(key);
  if (!set) return;
  set.delete(id);
  if (set.size === 0) map.delete(key);
}
