// Helpers shared by pki-enrollment's Postgres stores (one file per resource beside this one).

export type Row = Record<string, unknown>;
