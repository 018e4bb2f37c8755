// What pki-enrollment's Postgres stores (one `<resource>.store.ts` per resource folder) share.

/** A raw (snake_case) row as `queryRows` and `listRows` answer it. */
export type Row = Record<string, unknown>;
