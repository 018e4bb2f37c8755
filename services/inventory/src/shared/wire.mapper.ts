/**
 * Wire shapes of inventory's entities (ZITI-FACTS §5.4, §12): each resource's mapper
 * (`<resource>/<resource>.mapper.ts`) maps its domain → JSON with the pieces they all share here.
 */
export const ts = (d: Date) => d.toISOString();
export const self = (collection: string, id: string) => ({ self: { href: `./${collection}/${id}` } });

export function baseOf(
  e: { id: string; tags: Record<string, unknown>; createdAt: Date; updatedAt: Date },
  links: Record<string, { href: string }>,
) {
  return { id: e.id, createdAt: ts(e.createdAt), updatedAt: ts(e.updatedAt), tags: e.tags, _links: links };
}

export const ref = (entity: string, id: string, name: string | undefined, links: Record<string, { href: string }>) => ({
  id,
  ...(name !== undefined ? { name } : {}),
  entity,
  _links: links,
});
