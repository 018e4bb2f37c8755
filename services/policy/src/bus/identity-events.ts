/** Keeps the identity read model from auth's identity.* events (at-least-once, any order). */
export { identityEventSubscription } from './read-model-events.ts';
