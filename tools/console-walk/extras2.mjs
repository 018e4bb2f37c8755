// Detail pages of existing entities, identity service-config overrides, reset enrollment (updb), edge sessions delete.
import { page, log, shot, events, browser, ZAC, CTRL, setPage } from './lib.mjs';
import fs from 'node:fs';
process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
const M = CTRL + '/edge/management/v1',
  C = CTRL + '/edge/client/v1';
const pw = fs.readFileSync(`${process.env.ZITI_DATA_DIR ?? '/tmp/zac-data'}/admin-password`, 'utf8').trim();
const login = async (base, username, password) =>
  (
    await (
      await fetch(base + '/authenticate?method=password', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username, password }),
      })
    ).json()
  ).data;
const tok = (await login(M, 'admin', pw)).token;
const call = async (base, t, path, init = {}) => {
  const r = await fetch(base + path, { ...init, headers: { 'zt-session': t, 'content-type': 'application/json' } });
  const j = await r.json().catch(() => ({}));
  if (r.status >= 300) console.log('fixture', init.method ?? 'GET', path, r.status, JSON.stringify(j).slice(0, 300));
  return j;
};
const api = (path, init) => call(M, tok, path, init);
const post = async (path, body) => (await api(path, { method: 'POST', body: JSON.stringify(body) })).data?.id;
const results = [];
const result = (p, s, ok, note = '') => {
  results.push({ page: p, step: s, ok, note });
  console.log(`RESULT ${p} ${s} ${ok ? 'ok' : 'FAIL'} ${note}`);
};
const sfx = Date.now().toString(36);
const wait = (ms = 2500) => page.waitForTimeout(ms);
page.setDefaultTimeout(8000);

// Fixture: a dialable service on a router, a user with a password.
const attr = 'zac' + sfx;
const ct = (await api('/config-types?filter=' + encodeURIComponent('name="intercept.v1"'))).data[0].id;
const cfg = await post('/configs', {
  name: 'cfg-' + sfx,
  configTypeId: ct,
  data: { protocols: ['tcp'], addresses: ['x.ziti'], portRanges: [{ low: 1, high: 1 }] },
});
const svc = await post('/services', {
  name: 'svc-' + sfx,
  encryptionRequired: true,
  roleAttributes: [attr],
  configs: [cfg],
});
const er = await post('/edge-routers', { name: 'er-' + sfx, roleAttributes: [attr], isTunnelerEnabled: false });
const user = 'user-' + sfx;
const uid = await post('/identities', {
  name: user,
  type: 'User',
  isAdmin: false,
  roleAttributes: [attr],
  enrollment: { updb: user },
});
const enr = (await api(`/identities/${uid}`)).data.enrollment;
// Enroll the updb: POST /enroll?method=updb&token=…
const token = JSON.parse(Buffer.from(enr.updb.jwt.split('.')[1], 'base64url')).jti;
const en = await fetch(`${CTRL}/edge/client/v1/enroll?method=updb&token=${token}`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ password: 'Pass-word-123' }),
});
console.log('enroll updb', en.status);
const sp = await post('/service-policies', {
  name: 'sp-' + sfx,
  type: 'Dial',
  semantic: 'AnyOf',
  identityRoles: ['#' + attr],
  serviceRoles: ['#' + attr],
  postureCheckRoles: [],
});
const erp = await post('/edge-router-policies', {
  name: 'erp-' + sfx,
  semantic: 'AnyOf',
  identityRoles: ['#' + attr],
  edgeRouterRoles: ['#' + attr],
});
const serp = await post('/service-edge-router-policies', {
  name: 'serp-' + sfx,
  semantic: 'AnyOf',
  serviceRoles: ['#' + attr],
  edgeRouterRoles: ['#' + attr],
});
const pc = await post('/posture-checks', {
  name: 'pc-' + sfx,
  typeId: 'MFA',
  timeoutSeconds: 60,
  roleAttributes: [attr],
});

// Detail pages.
for (const route of [
  `identities/${uid}`,
  `services/advanced/${svc}`,
  `routers/${er}`,
  `configs/${cfg}`,
  `service-policies/${sp}`,
  `router-policies/${erp}`,
  `service-router-policies/${serp}`,
  'identities',
  'services',
  'posture-checks',
  'dashboard',
  'attributes',
]) {
  setPage('detail ' + route.split('/')[0] + (route.includes('/') ? '/:id' : ''));
  await page.goto(ZAC + '/' + route);
  await wait(4000);
  await shot('d_' + route.replace(/\//g, '_'));
}

// Overrides through the console's data service.
setPage('identity overrides');
await page.goto(ZAC + '/identities');
await wait(4000);
const ov = await page.evaluate(
  async ({ uid, svc, cfg }) => {
    const ds = window.ng.getComponent(document.querySelector('lib-identities')).svc.dataService;
    const out = {};
    const j = (e) => JSON.stringify(e?.error ?? e).slice(0, 400);
    try {
      out.add = await ds.saveSubdata('identities', uid, 'service-configs', [{ serviceId: svc, configId: cfg }]);
    } catch (e) {
      out.addErr = j(e);
    }
    try {
      out.list = await ds.getSubdata('identities', uid, 'service-configs');
    } catch (e) {
      out.listErr = j(e);
    }
    try {
      out.del = await ds.deleteSubdata('identities', uid, 'service-configs', [{ serviceId: svc, configId: cfg }]);
    } catch (e) {
      out.delErr = j(e);
    }
    return out;
  },
  { uid, svc, cfg },
);
result(
  'identities',
  'service-config overrides add/list/remove',
  !ov.addErr && !ov.listErr && !ov.delErr && ov.list?.data?.length === 1,
  JSON.stringify(ov).slice(0, 600),
);

// An edge session, then delete it through the sessions page.
setPage('sessions');
const ut = (await login(C, user, 'Pass-word-123'))?.token;
let sessionId;
for (let i = 0; i < 20 && !sessionId; i++) {
  sessionId = (
    await call(C, ut, '/sessions', { method: 'POST', body: JSON.stringify({ serviceId: svc, type: 'Dial' }) })
  ).data?.id;
  if (!sessionId) await new Promise((r) => setTimeout(r, 500));
}
await page.goto(ZAC + '/sessions');
await wait(4000);
await shot('sessions_with_one');
if (sessionId) {
  await page.evaluate((id) => {
    window.page.filterObject.delete([id]);
    window.page.filterObject.doDelete();
  }, sessionId);
  await wait(3500);
  result(
    'sessions',
    'delete',
    ((await api('/sessions?filter=' + encodeURIComponent(`id="${sessionId}"`))).data ?? []).length === 0,
    sessionId,
  );
} else result('sessions', 'create fixture', false);

// Reset enrollment of the updb identity (dialog path: authenticators/{id}/re-enroll).
setPage('identities reset-enrollment');
const detail = (await api(`/identities/${uid}`)).data;
await page.goto(ZAC + '/identities');
await wait(4000);
const re = await page
  .evaluate(
    async ({ detail }) => {
      const s = window.ng.getComponent(document.querySelector('lib-identities')).svc;
      try {
        return await s.dataService.resetEnrollment(detail.authenticators.updb.id, new Date(Date.now() + 86400000));
      } catch (e) {
        return { err: JSON.stringify(e?.error ?? e).slice(0, 400) };
      }
    },
    { detail },
  )
  .catch((e) => ({ err: e.message }));
result('identities', 'reset enrollment (authenticators/{id}/re-enroll)', !re?.err, JSON.stringify(re).slice(0, 300));
await shot('after_reset');

fs.writeFileSync(
  `${process.env.WALK_DIR ?? '/tmp/console-walk'}/extras2-events.json`,
  JSON.stringify({ events, results }, null, 2),
);
await browser.close();
