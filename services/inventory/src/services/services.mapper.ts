import { self } from '../shared/wire.mapper.ts';

export function serviceLinks(id: string) {
  const links: Record<string, { href: string }> = self('services', id);
  for (const key of ['service-edge-router-policies', 'service-policies', 'terminators', 'configs'])
    links[key] = { href: `./services/${id}/${key}` };
  return links;
}
