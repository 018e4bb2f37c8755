export interface IdentityTrace {
  identityId: string;
  enabled: boolean;
  traceId: string | null;
  until: Date | null;
  channels: string[];
  updatedAt: Date;
}

export interface IdentityTraceStore {
  get(identityId: string): Promise<IdentityTrace | null>;
  put(trace: IdentityTrace): Promise<void>;
}
