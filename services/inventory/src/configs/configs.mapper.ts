import type { Config, ConfigType } from '../shared/model.domain.ts';
import { baseOf, ref, self } from '../shared/wire.mapper.ts';

export function configDetail(c: Config, type: ConfigType | undefined) {
  return {
    ...baseOf(c, self('configs', c.id)),
    name: c.name,
    configTypeId: c.configTypeId,
    configType: ref('config-types', c.configTypeId, type?.name, self('config-types', c.configTypeId)),
    data: c.data,
  };
}
