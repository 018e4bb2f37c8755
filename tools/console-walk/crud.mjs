// Create / edit / delete through the console's own forms and page scripts.
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
const api = async (path) => (await fetch(M + path, { headers: { 'zt-session': tok } })).json();
const byName = async (type, name) => (await api(`/${type}?filter=${encodeURIComponent(`name="${name}"`)}`)).data?.[0];
const results = [];
const result = (pageName, step, ok, note = '') => {
  results.push({ page: pageName, step, ok, note });
  console.log(`RESULT ${pageName} ${step} ${ok ? 'ok' : 'FAIL'} ${note}`);
};
const sfx = Date.now().toString(36);
const only = process.argv.slice(2);
const want = (n) => only.length === 0 || only.includes(n);
const wait = (ms = 2500) => page.waitForTimeout(ms);
page.setDefaultTimeout(8000);

// Angular list pages: "+" opens the form; name field by placeholder; extra fills; save.
const angular = [
  { name: 'identities', route: 'identities', type: 'identities', ph: 'Name this identity' },
  {
    name: 'services',
    route: 'services',
    type: 'services',
    ph: 'Name this service',
    addRoute: 'services/advanced',
    editRoute: 'services/advanced',
  },
  { name: 'routers', route: 'routers', type: 'edge-routers', ph: 'Name this router' },
  { name: 'service-policies', route: 'service-policies', type: 'service-policies', ph: 'Name this service policy' },
  { name: 'router-policies', route: 'router-policies', type: 'edge-router-policies', ph: 'Name this router policy' },
  {
    name: 'service-router-policies',
    route: 'service-router-policies',
    type: 'service-edge-router-policies',
    ph: 'Name this service router policy',
  },
];
for (const a of angular) {
  if (!want(a.name)) continue;
  setPage(a.name + ':create');
  const name = `zac-${a.name}-${sfx}`;
  try {
    if (a.addRoute) {
      await page.goto(ZAC + '/' + a.addRoute);
      await wait(3500);
    } else {
      await page.goto(ZAC + '/' + a.route);
      await wait(3500);
      await page.locator('.action.icon-plus').first().click();
      await wait(2000);
    }
    const input = page.locator('input.form-field-input').first();
    await input.click();
    await input.pressSequentially(name);
    await wait(500);
    if (a.extra) await a.extra(page);
    await page.locator('.save-button').first().click();
    await wait(3500);
    await shot(`crud_${a.name}_create`);
    const made = await byName(a.type, name);
    result(a.name, 'create', !!made, made ? made.id : '');
    if (!made) continue;
    setPage(a.name + ':edit');
    await page.goto(ZAC + '/' + (a.editRoute ?? a.route) + '/' + made.id);
    await wait(3500);
    const nameInput = page.locator('input.form-field-input').first();
    await nameInput.click();
    await nameInput.press('End');
    await nameInput.pressSequentially('-e');
    await wait(500);
    await page.locator('.save-button').first().click();
    await wait(3500);
    await shot(`crud_${a.name}_edit`);
    const edited = await byName(a.type, name + '-e');
    result(a.name, 'edit', !!edited);
    setPage(a.name + ':delete');
    await page.goto(ZAC + '/' + a.route);
    await wait(3500);
    // Row menu "..." → Delete → confirm.
    await page
      .locator('#RowDots_' + made.id)
      .first()
      .click()
      .catch((e) => log('ui', { text: 'no row menu: ' + e.message.slice(0, 100) }));
    await wait(800);
    await page
      .locator('#TableActionButton_delete')
      .first()
      .click()
      .catch((e) => log('ui', { text: 'no Delete item: ' + e.message.slice(0, 100) }));
    await wait(1000);
    await shot(`crud_${a.name}_delete_confirm`);
    await page
      .locator('button.confirm')
      .last()
      .click()
      .catch((e) => log('ui', { text: 'no confirm: ' + e.message.slice(0, 100) }));
    await wait(3000);
    result(a.name, 'delete', !(await byName(a.type, name + '-e')));
  } catch (e) {
    result(a.name, 'script', false, e.message.slice(0, 200));
    await shot(`crud_${a.name}_error`);
  }
}

// Legacy (jQuery) pages: set the modal's fields, call the page's own save/edit/delete.
const legacy = [
  {
    name: 'config-types',
    route: 'config-types',
    type: 'config-types',
    fill: (n) => {
      $('#Name').val(n);
    },
  },
  {
    name: 'posture-checks',
    route: 'posture-checks',
    type: 'posture-checks',
    fill: (n) => {
      $('#Name').val(n);
    },
  },
  {
    name: 'auth-policies',
    route: 'auth-policies',
    type: 'auth-policies',
    fill: (n) => {
      $('#Name').val(n);
    },
  },
  {
    name: 'jwt-signers',
    route: 'jwt-signers',
    type: 'external-jwt-signers',
    fill: (n) => {
      $('#Name').val(n);
      $('#Issuer').val('https://issuer.example/' + n);
      $('#Audience').val('aud');
      $('#JWKSEndpoint').val('https://issuer.example/jwks');
    },
  },
  {
    name: 'certificate-authorities',
    route: 'certificate-authorities',
    type: 'cas',
    fill: (n) => {
      $('#Name').val(n);
      $('#IdentityNameFormat').val('[caName]-[commonName]');
      $('#Pem').val(window.__pem ?? '');
    },
  },
];
for (const l of legacy) {
  if (!want(l.name)) continue;
  setPage(l.name + ':create');
  const name = `zac-${l.name}-${sfx}`;
  try {
    await page.goto(ZAC + '/' + l.route);
    await wait(4000);
    await page.evaluate(() => {
      (document.querySelector('.action.icon-plus') || document.getElementById('AddButton'))?.click();
    });
    await wait(1500);
    if (l.name === 'certificate-authorities')
      await page.evaluate(
        (p) => {
          window.__pem = p;
        },
        fs.readFileSync(`${process.env.WALK_DIR ?? '/tmp/console-walk'}/ca.pem`, 'utf8'),
      );
    if (l.name === 'posture-checks')
      await page.evaluate(() => {
        $('#PostureType').val('MFA').trigger('change');
        $('#Timeout').val('300');
      });
    await page.evaluate(`(${l.fill.toString()})(${JSON.stringify(name)})`);
    await shot(`crud_${l.name}_form`);
    await page.evaluate(() => {
      try {
        window.page.save();
      } catch (e) {
        console.error('save threw ' + e);
      }
    });
    await wait(3500);
    await shot(`crud_${l.name}_create`);
    const made = await byName(l.type, name);
    result(l.name, 'create', !!made, made ? made.id : '');
    if (!made) continue;
    setPage(l.name + ':edit');
    await page.evaluate((id) => window.page.edit(id), made.id);
    await wait(2500);
    await page.evaluate((n) => {
      $('#Name').val(n);
      window.page.save();
    }, name + '-e');
    await wait(3500);
    await shot(`crud_${l.name}_edit`);
    result(l.name, 'edit', !!(await byName(l.type, name + '-e')));
    setPage(l.name + ':delete');
    await page.evaluate((id) => {
      window.page.filterObject.delete([id]);
      window.page.filterObject.doDelete();
    }, made.id);
    await wait(3500);
    result(l.name, 'delete', !(await byName(l.type, name + '-e')) && !(await byName(l.type, name)));
  } catch (e) {
    result(l.name, 'script', false, e.message.slice(0, 200));
    await shot(`crud_${l.name}_error`);
  }
}
fs.writeFileSync(
  `${process.env.WALK_DIR ?? '/tmp/console-walk'}/crud-events.json`,
  JSON.stringify({ events, results }, null, 2),
);
await browser.close();
