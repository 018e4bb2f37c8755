import type { ConfigType } from '../shared/model.domain.ts';
import { baseOf, self } from '../shared/wire.mapper.ts';

export function configTypeDetail(t: ConfigType) {
  return { ...baseOf(t, self('config-types', t.id)), name: t.name, schema: t.schema };
}
