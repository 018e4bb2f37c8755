import { listEnvelope } from '@ziti/contracts';
import { describe, expect, it } from 'vitest';
import { answerText } from './responses.transport.ts';

describe('answerText', () => {
  it('writes an unlimited list limit as math.MaxInt64, exactly, as the reference does', () => {
    const body = listEnvelope([{ name: 'unlimited-x', limit: -1 }], { limit: -1, offset: 0, totalCount: 1 }, ['name']);
    expect(answerText(body)).toBe(
      '{"data":[{"name":"unlimited-x","limit":-1}],' +
        '"meta":{"pagination":{"limit":9223372036854775807,"offset":0,"totalCount":1},"filterableFields":["name"]}}',
    );
    // what a client reads back is the nearest double, as from the reference's text
    expect(JSON.parse(answerText(body)).meta.pagination.limit).toBe(JSON.parse('9223372036854775807'));
  });

  it('leaves every other answer as JSON.stringify writes it, a -1 not made by the list envelope too', () => {
    for (const body of [
      listEnvelope([], { limit: 10, offset: 0, totalCount: 0 }),
      // the data-integrity results: the reference reports -1 there
      { data: { results: [] }, meta: { pagination: { limit: -1, offset: 0, totalCount: 0 } } },
      { data: { id: 'x' }, meta: {} },
      { data: { meta: { pagination: { limit: 2 ** 63 } } }, meta: null },
      null,
      'text',
    ]) {
      expect(answerText(body)).toBe(JSON.stringify(body));
    }
  });
});
