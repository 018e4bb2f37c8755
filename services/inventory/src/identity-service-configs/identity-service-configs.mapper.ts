import { serviceLinks } from '../services/services.mapper.ts';
import type { IdentityServiceConfig } from '../shared/model.domain.ts';
import { ref, self } from '../shared/wire.mapper.ts';

export function serviceConfigDetail(l: IdentityServiceConfig, names: { service?: string; config?: string }) {
  return {
    serviceId: l.serviceId,
    service: ref('services', l.serviceId, names.service, serviceLinks(l.serviceId)),
    configId: l.configId,
    config: ref('configs', l.configId, names.config, self('configs', l.configId)),
  };
}
