// `GET /extensions/audit-records/export` (management.exportAuditRecords): the audit records a filter
// selects as JSON lines, streamed page by page from the audit service's `listAuditRecords` over the
// bus. One page is held at a time and the next is asked for only once the socket took the last, so
// an export of any size holds the memory of one page.

import { ApiError, type OperationReply, type OperationRequest, isErrorReply, subjects } from '@ziti/contracts';
import { type Bus, type Logger, busFailureError } from '@ziti/platform';
import type { Response, StreamingHandler } from '../pipeline/pipeline.transport.ts';
import {
  type ExportCursor,
  exportPageSize,
  exportPlanOf,
  ndjsonLine,
  nextCursor,
  pageQuery,
} from './audit-export.domain.ts';

export interface AuditExportDeps {
  bus: Bus;
  logger: Logger;
  /** Budget of each page's request (default 10 s, the gateway's). */
  requestTimeoutMs?: number;
  /** Records per page (default the list's largest page). */
  pageSize?: number;
}

interface Page {
  records: { at: string; id: string }[];
}

/** The client went away: the export stops asking for pages. */
class ClientGone extends Error {}

export function auditExportHandler(deps: AuditExportDeps): StreamingHandler {
  const pageSize = deps.pageSize ?? exportPageSize;
  const listSubject = subjects.operation('audit', 'management', 'listAuditRecords');

  async function page(request: OperationRequest, query: { filter: string; sort?: string }): Promise<Page> {
    let reply: OperationReply;
    try {
      reply = (await deps.bus.request(
        listSubject,
        { ...request, operationId: 'listAuditRecords', query },
        { timeoutMs: deps.requestTimeoutMs ?? 10_000 },
      )) as OperationReply;
    } catch (err) {
      throw busFailureError(err, 'audit', 'listAuditRecords');
    }
    if (isErrorReply(reply)) throw ApiError.fromJSON(reply.error);
    const data = (reply.body as { data?: unknown } | undefined)?.data;
    if (!Array.isArray(data)) throw new Error('listAuditRecords answered without a data array');
    return { records: data as Page['records'] };
  }

  /** Writes a chunk, resolving once the socket can take more. */
  function write(res: Response, chunk: string): Promise<void> {
    if (res.destroyed || res.writableEnded) return Promise.reject(new ClientGone());
    if (res.write(chunk)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const done = (err?: Error) => {
        res.off('drain', onDrain);
        res.off('close', onClose);
        if (err) reject(err);
        else resolve();
      };
      const onDrain = () => done();
      const onClose = () => done(new ClientGone());
      res.on('drain', onDrain);
      res.on('close', onClose);
    });
  }

  return {
    kind: 'stream',
    async serve(request, { res }) {
      const plan = exportPlanOf(
        typeof request.query.filter === 'string' ? request.query.filter : undefined,
        typeof request.query.sort === 'string' ? request.query.sort : undefined,
      );
      let cursor: ExportCursor = { kind: 'start' };
      const first = pageQuery(plan, cursor, pageSize);
      if (!first) throw new ApiError('INVALID_PAGINATION', { code: 'UNHANDLED', message: 'skip is too large' });
      // The first page answers the filter's errors (the list's 400) before anything is written.
      let current = await page(request, first);
      res.statusCode = 200;
      res.setHeader('content-type', 'application/x-ndjson; charset=utf-8');
      res.setHeader('content-disposition', 'attachment; filename="audit-records.ndjson"');
      let written = 0;
      try {
        for (;;) {
          let records = current.records;
          if (plan.limit !== undefined) records = records.slice(0, Math.max(0, plan.limit - written));
          if (records.length > 0) {
            await write(res, records.map(ndjsonLine).join(''));
            written += records.length;
          }
          const full = current.records.length >= pageSize;
          if (!full || (plan.limit !== undefined && written >= plan.limit)) break;
          cursor = nextCursor(plan, cursor, current.records.length, current.records.at(-1));
          const next = pageQuery(plan, cursor, pageSize);
          if (!next) {
            // A caller's own sort pages by offset, which the list does not take past MAX_OFFSET: the
            // export is cut (not ended cleanly) so the client cannot take it for complete.
            deps.logger.warn({ written }, 'audit export cut: a custom sort cannot page deeper');
            res.destroy();
            return;
          }
          current = await page(request, next);
        }
        res.end();
      } catch (err) {
        if (err instanceof ClientGone) return;
        deps.logger.warn({ err, written }, 'audit export failed after it started; the response is cut');
        res.destroy();
      }
    },
  };
}
