import { page, log, shot, events, browser, ZAC, CTRL, setPage } from './lib.mjs';
import fs from 'node:fs';
process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
const M = CTRL + '/edge/management/v1';
const pw = fs.readFileSync(`${process.env.ZITI_DATA_DIR ?? '/tmp/zac-data'}/admin-password`, 'utf8').trim();
const tok = (
  await (
    await fetch(M + '/authenticate?method=password', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: pw }),
    })
  ).json()
).data.token;
const api = async (path, init = {}) =>
  (await fetch(M + path, { ...init, headers: { 'zt-session': tok, 'content-type': 'application/json' } })).json();
const sfx = Date.now().toString(36);
const svc = (
  await api('/services', { method: 'POST', body: JSON.stringify({ name: 't-svc-' + sfx, encryptionRequired: true }) })
).data.id;
const er = (await api('/edge-routers', { method: 'POST', body: JSON.stringify({ name: 't-er-' + sfx }) })).data.id;
setPage('terminators');
await page.goto(ZAC + '/terminators');
await page.waitForTimeout(4000);
const call = (args) =>
  page.evaluate(
    (args) =>
      new Promise((res) => {
        window.service.call(args.name, args.params, (r) => res(r));
        setTimeout(() => res('timeout'), 8000);
      }),
    args,
  );
const paging = await page.evaluate(() => window.page.filterObject.paging);
// The page's params() after redefineObject: empty strings and empty objects dropped.
const created = await call({
  name: 'dataSave',
  params: {
    type: 'terminators',
    paging,
    save: {
      service: svc,
      router: er,
      cost: 0,
      binding: 'transport',
      address: 'tcp:localhost:8080',
      precedence: 'default',
    },
  },
});
console.log('create ->', JSON.stringify(created).slice(0, 300));
const list = (await api('/terminators?filter=' + encodeURIComponent(`service="${svc}"`))).data;
console.log('RESULT terminators create', list.length === 1 ? 'ok' : 'FAIL');
if (list.length) {
  const id = list[0].id;
  const edited = await call({
    name: 'dataSave',
    params: {
      type: 'terminators',
      paging,
      id,
      save: {
        service: svc,
        router: er,
        cost: 5,
        binding: 'transport',
        address: 'tcp:localhost:8081',
        precedence: 'required',
      },
    },
  });
  const d = (await api('/terminators/' + id)).data;
  console.log(
    'RESULT terminators edit',
    d.cost === 5 && d.address === 'tcp:localhost:8081' ? 'ok' : 'FAIL',
    JSON.stringify(edited).slice(0, 200),
  );
  await page.evaluate((id) => {
    window.page.filterObject.delete([id]);
    window.page.filterObject.doDelete();
  }, id);
  await page.waitForTimeout(3000);
  console.log(
    'RESULT terminators delete',
    (await api('/terminators?filter=' + encodeURIComponent(`service="${svc}"`))).data.length === 0 ? 'ok' : 'FAIL',
  );
}
await shot('terminators_after');
await api('/services/' + svc, { method: 'DELETE' });
await api('/edge-routers/' + er, { method: 'DELETE' });
await browser.close();
