/** Wire shapes of auth's entities (ZITI-FACTS §5.4, §12): each resource's mapper maps domain → JSON. */
export const ts = (d: Date) => d.toISOString();
