export * from './bus.ts';
export * from './envelopes.ts';
export * from './errors.ts';
export * from './operation.ts';
