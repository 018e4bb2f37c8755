// Drives the built console (served on 127.0.0.1:4300) against the controller; records failed requests and console errors.
import { chromium } from 'playwright-core';
import fs from 'node:fs';
const CTRL = process.env.CTRL ?? 'https://localhost:19280';
const ZAC = process.env.ZAC ?? 'http://127.0.0.1:4300';
const password = fs.readFileSync(`${process.env.ZITI_DATA_DIR ?? '/tmp/zac-data'}/admin-password`, 'utf8').trim();

const events = [];
export let current = 'login';
export const setPage = (p) => {
  current = p;
};
const log = (kind, detail) => {
  events.push({ page: current, kind, ...detail });
  console.log(`[${current}] ${kind}`, JSON.stringify(detail).slice(0, 600));
};

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--ignore-certificate-errors', '--no-sandbox'],
});
const ctx = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1600, height: 1000 } });
const page = await ctx.newPage();
const bodies = new Map();
page.on('request', (r) => {
  if (r.url().startsWith(CTRL)) bodies.set(r, r.postData());
});
page.on('response', async (r) => {
  if (!r.url().startsWith(CTRL)) return;
  const req = r.request();
  const line = `${req.method()} ${r.url().slice(CTRL.length)} -> ${r.status()}`;
  if (process.env.VERBOSE)
    console.log(`  ${line}`, req.method() !== 'GET' ? (bodies.get(req) ?? '').slice(0, 400) : '');
  if (r.status() >= 400) {
    let text = '';
    try {
      text = (await r.text()).slice(0, 800);
    } catch {}
    log('http', {
      req: `${req.method()} ${decodeURIComponent(r.url().slice(CTRL.length))}`,
      status: r.status(),
      body: bodies.get(req)?.slice(0, 500),
      answer: text,
    });
  }
});
page.on('requestfailed', (r) => {
  if (r.url().startsWith(CTRL) || !r.url().startsWith(ZAC))
    log('requestfailed', { req: `${r.method()} ${r.url()}`, error: r.failure()?.errorText });
});
page.on('console', (m) => {
  if (m.type() === 'error' || m.type() === 'warning') log('console.' + m.type(), { text: m.text().slice(0, 600) });
});
page.on('pageerror', (e) => log('pageerror', { text: String(e.stack ?? e).slice(0, 800) }));

async function shot(name) {
  await page.screenshot({ path: `${process.env.WALK_DIR ?? '/tmp/console-walk'}/shots/${name}.png` });
}
fs.mkdirSync(`${process.env.WALK_DIR ?? '/tmp/console-walk'}/shots`, { recursive: true });

// Log in through the login page.
await page.goto(ZAC + '/login');
await page.waitForTimeout(2500);
await shot('login0');
const inputs = page.locator('input');
if (await page.getByText('Set Controller').count()) {
  await page.locator('input').nth(0).pressSequentially('local');
  await page.locator('input').nth(1).pressSequentially(CTRL);
  await page.getByText('Set Controller').click();
  await page.waitForTimeout(2000);
}
await shot('login1');
await page.getByPlaceholder('enter username of controller').pressSequentially('admin');
await page.getByPlaceholder('enter password of controller').pressSequentially(password);
await page.waitForTimeout(1500);
await page.getByRole('button', { name: 'Login' }).click();
await page.waitForTimeout(4000);
await shot('login2');
console.log('after login at', page.url());

export { page, log, shot, events, browser, ZAC, CTRL };
