import { page, log, shot, events, browser, ZAC, setPage } from './lib.mjs';
import fs from 'node:fs';
const only = process.argv.slice(2);

const pages = [
  'dashboard',
  'identities',
  'services',
  'services/simple',
  'services/select',
  'configs',
  'config-types',
  'routers',
  'transit-routers',
  'service-policies',
  'router-policies',
  'service-router-policies',
  'posture-checks',
  'sessions',
  'api-sessions',
  'certificate-authorities',
  'auth-policies',
  'jwt-signers',
  'terminators',
  'attributes',
  'network-visualizer',
  'identities/create',
  'services/advanced',
  'configs/create',
  'routers/create',
  'service-policies/create',
  'router-policies/create',
  'service-router-policies/create',
];
for (const p of only.length ? only : pages) {
  setPage(p);
  await page.goto(ZAC + '/' + p);
  await page.waitForTimeout(Number(process.env.WAIT ?? 4000));
  await shot(p.replace(/\//g, '_'));
}
fs.writeFileSync(`${process.env.WALK_DIR ?? '/tmp/console-walk'}/events.json`, JSON.stringify(events, null, 2));
await browser.close();
