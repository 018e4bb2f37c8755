import { page, log, shot, events, browser, ZAC, CTRL, setPage } from './lib.mjs';
import fs from 'node:fs';
process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
const sfx = Date.now().toString(36);
setPage('posture-checks');
await page.goto(ZAC + '/posture-checks');
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
const bodies = {
  DOMAIN: { domains: ['example.com'] },
  MAC: { macAddresses: ['aa:bb:cc:dd:ee:ff'] },
  OS: {
    operatingSystems: [
      { type: 'Windows', versions: ['>=10.0.19041'] },
      { type: 'Linux', versions: [''] },
    ],
  },
  PROCESS: { process: { hashes: [], osType: 'Windows', path: 'C:\\app.exe', signerFingerprint: '' } },
  MFA: { timeoutSeconds: 0, promptOnWake: false, promptOnUnlock: true },
};
for (const [typeId, extra] of Object.entries(bodies)) {
  const save = { name: `pc-${typeId}-${sfx}`, typeId, roleAttributes: ['a'], tags: {}, ...extra };
  const r = await call({ name: 'dataSave', params: { type: 'posture-checks', paging, save } });
  const made = r?.data?.find?.((x) => x.name === save.name);
  console.log('RESULT posture', typeId, 'create', made ? 'ok' : 'FAIL', made ? '' : JSON.stringify(r).slice(0, 300));
  if (!made) continue;
  const e = await call({
    name: 'dataSave',
    params: { type: 'posture-checks', paging, id: made.id, save: { ...save, name: save.name + '-e' } },
  });
  console.log(
    'RESULT posture',
    typeId,
    'edit',
    e?.data?.some?.((x) => x.name === save.name + '-e') ? 'ok' : 'FAIL ' + JSON.stringify(e).slice(0, 300),
  );
  await call({ name: 'delete', params: { type: 'posture-checks', ids: [made.id], paging } });
}
await browser.close();
