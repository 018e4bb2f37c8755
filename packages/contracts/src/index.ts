export * from './bus.ts';
export * from './envelopes.ts';
export * from './errors.ts';
export * from './operation.ts';
export * from './table.ts';
export * from './validation.ts';
export * from './openapi.ts';
export * from './events.ts';
