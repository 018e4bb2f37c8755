/**
 * Named prepared statements for PGlite (`npm start`'s embedded Postgres), which has none of its
 * own: its `query` parses, plans and describes every statement anew in six crossings into the
 * WebAssembly module (parse, describe, bind, describe, execute, sync), and for the writes the
 * services make most (an outbox insert with its position, a consumer's cursor update, an audit
 * record) parse and plan are most of the statement's cost: ~1.1 ms against ~0.35 ms when the same
 * statement is prepared once and run with `EXECUTE` in one simple-protocol crossing.
 *
 * So a statement text that comes a second time is prepared (`PREPARE zp_<n> AS
 * <text>`), its parameter types read back from `pg_prepared_statements`, and from then on it runs
 * as `EXECUTE zp_<n>('<v1>', …)`: each value serialized exactly as PGlite's own `query` serializes
 * it for that parameter type (the instance's serializers, or the call's), then quoted as an escape
 * string literal (`E'…'`, `\` and `'` doubled: safe whatever `standard_conforming_strings` says), which
 * Postgres hands to the parameter type's input function as it does a bound text value. Results
 * come back through PGlite's own result parsing (`exec` with the call's options), so rows, fields
 * and `affectedRows` are what `query` gives, and an error names the statement and its parameters as
 * `query`'s does (never the `EXECUTE`, whose text holds the values).
 *
 * What stays on the plain path: anything but a query, a data-changing statement or `values` (no
 * DDL, no `set`), calls with `paramTypes` or a blob,
 * texts with a `;` (a prepared statement is one command), values whose text holds a NUL (a simple
 * query is a C string), a text being prepared by another caller (no caller waits for another: one
 * inside a transaction would wait for one outside it, which waits for the transaction's end), and
 * any text Postgres refuses to prepare (once refused, always plain). A prepare inside a transaction
 * runs under a savepoint, so a refusal leaves the caller's transaction as it was; prepared
 * statements are not transactional, so a later rollback keeps them. At most `statements` texts
 * are prepared per database (the code's fixed statements come first and stay; a list built from a
 * request's filter and repeated takes a place only while places remain) and `texts` counted.
 */
import type { PGlite, QueryOptions, Results, Transaction } from '@electric-sql/pglite';

interface Entry {
  uses: number;
  name?: string;
  oids?: number[];
  preparing?: boolean;
  refused?: boolean;
}

type Query = <T>(text: string, params?: unknown[], options?: QueryOptions) => Promise<Results<T>>;
type Exec = (text: string, options?: QueryOptions) => Promise<Array<Results>>;

export interface PreparedLimits {
  /** Texts prepared per database, at most. */
  statements: number;
  /** Texts whose uses are counted, at most (the unprepared ones are forgotten past it). */
  texts: number;
}

/** What `PREPARE` takes: a query, a data-changing statement, or `values`. */
const preparable = /^\s*(select|insert|update|delete|with|values)\b/i;

const defaultLimits: PreparedLimits = { statements: 256, texts: 4_096 };

/** Makes `client.query` and its transactions' `query` run repeated statements as prepared ones. */
export function usePreparedStatements(client: PGlite, limits: PreparedLimits = defaultLimits): void {
  const texts = new Map<string, Entry>();
  let prepared = 0;

  const entryOf = (text: string): Entry => {
    let entry = texts.get(text);
    if (!entry) {
      if (texts.size >= limits.texts) for (const [t, e] of texts) if (!e.name && !e.preparing) texts.delete(t);
      entry = { uses: 0 };
      texts.set(text, entry);
    }
    return entry;
  };

  const prepare = async (exec: Exec, text: string, entry: Entry, inTransaction: boolean): Promise<void> => {
    const name = `zp_${prepared + 1}`;
    entry.preparing = true;
    prepared++;
    const statements = [
      `prepare ${name} as ${text}\n`,
      `select array_to_string(parameter_types::oid[], ',') as oids from pg_prepared_statements where name = '${name}'`,
    ];
    let saved = false;
    try {
      // Its own statement: a script that does not parse runs none of its statements.
      if (inTransaction) {
        await exec('savepoint zp_prepare');
        saved = true;
      }
      const results = await exec(statements.join(';\n'));
      if (saved) await exec('release savepoint zp_prepare');
      saved = false;
      const oids = (results[1]?.rows[0] as { oids?: string } | undefined)?.oids;
      if (oids === undefined) throw new Error(`${name} was not prepared`);
      entry.oids = oids === '' ? [] : oids.split(',').map(Number);
      entry.name = name;
    } catch (err) {
      prepared--;
      // A transaction that had failed before this call: the plain statement reports that itself.
      if ((err as { code?: string }).code === '25P02') return;
      entry.refused = true;
      if (saved) await exec('rollback to savepoint zp_prepare;\nrelease savepoint zp_prepare');
    } finally {
      entry.preparing = false;
    }
  };

  /** The `EXECUTE` argument list, or undefined where a value cannot go as a literal. */
  const literals = (entry: Entry, params: unknown[], options: QueryOptions | undefined): string | undefined => {
    const oids = entry.oids!;
    if (oids.length !== params.length) return undefined;
    const out: string[] = [];
    for (let i = 0; i < params.length; i++) {
      const value = params[i];
      if (value === null || value === undefined) {
        out.push('null');
        continue;
      }
      const serialize = options?.serializers?.[oids[i]!] ?? client.serializers[oids[i]!];
      const text: unknown = serialize ? serialize(value) : (value as { toString(): string }).toString();
      if (typeof text !== 'string' || text.includes('\0')) return undefined;
      // An escape string (`E'…'`): backslash is its escape whatever `standard_conforming_strings`
      // says, so doubling `\` and `'` leaves nothing of the value that could end the literal.
      out.push(`E'${text.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`);
    }
    return out.join(', ');
  };

  const wrap = (plain: Query, exec: Exec, inTransaction: boolean): Query =>
    async function query<T>(text: string, params?: unknown[], options?: QueryOptions): Promise<Results<T>> {
      if (options?.paramTypes || options?.blob || text.includes(';') || !preparable.test(text))
        return plain<T>(text, params, options);
      params ??= [];
      const entry = entryOf(text);
      entry.uses++;
      if (!entry.name && !entry.preparing && !entry.refused && entry.uses >= 2 && prepared < limits.statements)
        await prepare(exec, text, entry, inTransaction);
      const args = entry.name ? literals(entry, params, options) : undefined;
      if (args === undefined) return plain<T>(text, params, options);
      try {
        const [result] = await exec(args ? `execute ${entry.name}(${args})` : `execute ${entry.name}`, options);
        return result as Results<T>;
      } catch (err) {
        // PGlite names the failed statement on its error: the statement and its parameters as the
        // plain path reports them, never the `EXECUTE` that carries the values in its text.
        if (err && typeof err === 'object' && 'query' in err)
          Object.assign(err, { query: text, params, queryOptions: options });
        throw err;
      }
    };

  const query = client.query.bind(client) as Query;
  const exec = client.exec.bind(client) as Exec;
  const transaction = client.transaction.bind(client);
  client.query = wrap(query, exec, false) as PGlite['query'];
  client.transaction = (<T>(callback: (tx: Transaction) => Promise<T>) =>
    transaction((tx) => {
      const inner = Object.create(tx) as Transaction;
      inner.query = wrap(tx.query.bind(tx) as Query, tx.exec.bind(tx) as Exec, true) as Transaction['query'];
      return callback(inner);
    })) as PGlite['transaction'];
}
