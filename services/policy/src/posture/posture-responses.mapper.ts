import { type PromptedService, mfaPromptGraceSeconds } from './posture-data.domain.ts';

/** `postureResponse.services`: the services a wake or unlock report now prompts MFA for. */
export const promptedServices = (list: PromptedService[]) => ({
  services: list.map((s) => ({
    id: s.id,
    name: s.name,
    postureQueryType: 'MFA',
    timeout: s.timeout,
    timeoutRemaining: mfaPromptGraceSeconds,
  })),
});
