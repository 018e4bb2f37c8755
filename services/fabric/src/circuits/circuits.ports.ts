/** A circuit as the controller keeps it while it lives (docs/adr/0023). */
export interface CircuitRecord {
  id: string;
  sessionId: string;
  apiSessionId: string;
  identityId: string;
  serviceId: string;
  terminatorId: string;
  /** Router ids from the dialling router to the terminator's. */
  path: string[];
  /** The links between them, in order (none when one router carries it; absent in older records). */
  links?: string[];
  ingressId: string;
  egressId: string;
  /** The fabric replica that routed it. */
  replicaId: string;
  createdAt: string;
}

/**
 * Where circuits are kept so any replica can answer for them (a session's route path, a fault
 * reported to another replica): Redis in the cluster, memory under `npm start`.
 */
export interface CircuitStore {
  add(circuit: CircuitRecord): Promise<void>;
  /** Removes and answers it (null: no such circuit, or another replica removed it first). */
  remove(id: string): Promise<CircuitRecord | null>;
  get(id: string): Promise<CircuitRecord | null>;
  /** The circuits whose path crosses this router. */
  ofRouter(routerId: string): Promise<CircuitRecord[]>;
  /** Session id → its live circuits. */
  ofSessions(sessionIds: string[]): Promise<Map<string, CircuitRecord[]>>;
  count(): Promise<number>;
  close(): Promise<void>;
}
