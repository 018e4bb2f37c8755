/**
 * Static checks of deploy/ that need neither Docker nor Helm:
 *   node --import tsx deploy/check.ts
 *
 * - every YAML file that is not a Helm template parses (merge keys on, duplicate keys are errors);
 * - Chart.yaml names the chart after its folder;
 * - every `.Values.x.y` a template reads exists in values.yaml, and every template's blocks are balanced;
 * - the chart's service table (the `ziti-edge.traits` helper) and compose.yaml give each service exactly the
 *   environment of the runtime contract below, and the chart's Secret holds every key a pod reads from it;
 * - every secret variable can also come from a Secret of the user's own (the `ziti-edge.secretSources` table), the
 *   chart's Secret leaves out exactly the variables taken from one, and the pods read them through it;
 * - the probes: complete chart-wide, per-service overrides only of known probes and fields, all read by the
 *   Deployment; values.yaml passes values.schema.json, and values the schema must refuse are refused;
 * - metrics: under values metrics.scrapeAnnotations the services' pods carry the Prometheus scrape annotations
 *   (port = the health port, path /metrics, which the health listener serves);
 * - NOTES.txt says how to log in, with the admin password from wherever it is kept; `helm test` asks every service;
 * - the entrypoint knows the five services.
 * It renders nothing: a template error that only shows when rendering is not caught here.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { parseAllDocuments, parse as parseYaml } from 'yaml';

const deployDir = dirname(fileURLToPath(import.meta.url));
const chartDir = join(deployDir, 'helm', 'ziti-edge');
const services = ['gateway', 'auth', 'pki-enrollment', 'policy', 'inventory'] as const;
type ServiceName = (typeof services)[number];

/** The runtime contract: what each service must be given. */
const common = ['NATS_URL', 'LOG_LEVEL', 'HEALTH_PORT', 'ZITI_SNAPSHOT_DIR'];
const contract: Record<ServiceName, string[]> = {
  gateway: [
    ...common,
    'REDIS_URL',
    'ZITI_BIND',
    'ZITI_PORT',
    'ZITI_ADVERTISED_ADDRESS',
    'ZITI_SESSION_TIMEOUT_MINUTES',
  ],
  auth: [
    ...common,
    'REDIS_URL',
    'AUTH_DATABASE_URL',
    'ZITI_SECRET_KEY',
    'ZITI_ADMIN_USERNAME',
    'ZITI_ADMIN_PASSWORD',
    'ZITI_SESSION_TIMEOUT_MINUTES',
    'ZITI_ADVERTISED_ADDRESS',
  ],
  'pki-enrollment': [...common, 'PKI_DATABASE_URL', 'ZITI_SECRET_KEY', 'ZITI_ADVERTISED_ADDRESS'],
  policy: [...common, 'POLICY_DATABASE_URL'],
  inventory: [...common, 'INVENTORY_DATABASE_URL'],
};
/** May be set for any service (optional settings of the code, the entrypoint's choice, the health listener). */
const optional = new Set([
  'ZITI_SERVICE',
  'HEALTH_BIND',
  'ZITI_PKI_SIGNER_CERT_FILE',
  'ZITI_PKI_SIGNER_KEY_FILE',
  'ZITI_SERVER_CERT_DAYS',
  'ZITI_IDENTITY_CERT_DAYS',
  'ZITI_ENROLLMENT_DURATION_MINUTES',
  'ZITI_AUTH_RATE_LIMIT',
  'ZITI_AUTH_RATE_BURST',
  'ZITI_HASH_CONCURRENCY',
  'ZITI_HASH_NICE',
  'ZITI_HASH_QUEUE_LIMIT',
  'ZITI_TOTP_ISSUER',
  'ZITI_REVISION',
  'ZITI_BUILD_DATE',
  'ZITI_BUS_NAMESPACE',
  'REDIS_KEY_PREFIX',
  'DATABASE_POOL_SIZE',
  'NODE_OPTIONS',
]);
const known = new Set([...Object.values(contract).flat(), ...optional]);

const problems: string[] = [];
const report = (where: string, what: string) => problems.push(`${relative(deployDir, where) || '.'}: ${what}`);

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? (e.name === 'node_modules' ? [] : walk(join(dir, e.name))) : [join(dir, e.name)],
  );
}

function sameSet(a: Iterable<string>, b: Iterable<string>): { missing: string[]; extra: string[] } {
  const as = new Set(a);
  const bs = new Set(b);
  return { missing: [...bs].filter((x) => !as.has(x)).sort(), extra: [...as].filter((x) => !bs.has(x)).sort() };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// 1. Every YAML file that is not a template parses.
const files = walk(deployDir);
const isTemplate = (f: string) => f.split(/[\\/]/).includes('templates');
const parsed = new Map<string, unknown>();
for (const file of files.filter((f) => /\.ya?ml$/.test(f) && !isTemplate(f))) {
  const docs = parseAllDocuments(readFileSync(file, 'utf8'), { merge: true, uniqueKeys: true });
  const list = Array.isArray(docs) ? docs : [];
  for (const doc of list) {
    for (const e of [...doc.errors, ...doc.warnings]) report(file, e.message.split('\n')[0] ?? e.message);
  }
  if (list.length === 1 && list[0]) parsed.set(file, list[0].toJS({ maxAliasCount: -1 }));
}

// 2. The chart.
const chart = parsed.get(join(chartDir, 'Chart.yaml'));
if (!isRecord(chart)) report(chartDir, 'Chart.yaml missing or not a mapping');
else {
  if (chart.apiVersion !== 'v2') report(chartDir, 'Chart.yaml apiVersion must be v2');
  if (chart.name !== basename(chartDir)) report(chartDir, `Chart.yaml name ${String(chart.name)} is not the folder's`);
  if (!/^\d+\.\d+\.\d+/.test(String(chart.version))) report(chartDir, 'Chart.yaml version is not semver');
}
const values = parsed.get(join(chartDir, 'values.yaml'));
if (!isRecord(values)) report(chartDir, 'values.yaml missing or not a mapping');

function hasPath(root: unknown, path: string[]): boolean {
  let node = root;
  for (const key of path) {
    if (!isRecord(node) || !(key in node)) return false;
    node = node[key];
  }
  return true;
}

const templateDir = join(chartDir, 'templates');
const templates = walk(templateDir);
const actionPattern = /{{-?\s*(\/\*[\s\S]*?\*\/)?([\s\S]*?)-?}}/g;
for (const file of templates) {
  const text = readFileSync(file, 'utf8');
  const stack: string[] = [];
  for (const m of text.matchAll(actionPattern)) {
    const body = (m[2] ?? '').trim();
    for (const ref of body.matchAll(/\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)/g)) {
      const path = (ref[1] ?? '').slice(1).split('.');
      if (!hasPath(values, path)) report(file, `.Values.${path.join('.')} is not in values.yaml`);
    }
    const word = body.split(/\s+/)[0] ?? '';
    if (['if', 'range', 'with', 'define', 'block'].includes(word)) stack.push(word);
    else if (word === 'end' && stack.pop() === undefined) report(file, 'an {{ end }} closes nothing');
  }
  if (stack.length > 0) report(file, `unclosed blocks: ${stack.join(', ')}`);
}

// 3. The chart's service table gives each service the contract's environment.
const helpersFile = join(templateDir, '_helpers.tpl');
const helpers = readFileSync(helpersFile, 'utf8');
const traitsBody = /{{- define "ziti-edge\.traits" -}}\n([\s\S]*?)\n{{- end }}/.exec(helpers)?.[1];
const traits: unknown = traitsBody ? parseYaml(traitsBody) : undefined;
if (!isRecord(traits)) report(helpersFile, 'no ziti-edge.traits table');
else {
  const { missing, extra } = sameSet(Object.keys(traits), services);
  if (missing.length || extra.length) report(helpersFile, `traits: missing ${missing} extra ${extra}`);
  const traitEnv: Record<string, string[]> = {
    redis: ['REDIS_URL'],
    secretKey: ['ZITI_SECRET_KEY'],
    admin: ['ZITI_ADMIN_USERNAME', 'ZITI_ADMIN_PASSWORD'],
    sessionTimeout: ['ZITI_SESSION_TIMEOUT_MINUTES'],
    advertised: ['ZITI_ADVERTISED_ADDRESS'],
    https: ['ZITI_BIND', 'ZITI_PORT'],
    signer: [],
  };
  for (const name of services) {
    const t = traits[name];
    if (!isRecord(t)) continue;
    const env = [...common];
    for (const [trait, on] of Object.entries(t)) {
      if (trait === 'database') {
        if (typeof on === 'string' && on !== '') env.push(on);
      } else if (!(trait in traitEnv)) report(helpersFile, `traits.${name}.${trait}: unknown trait`);
      else if (on === true) env.push(...(traitEnv[trait] ?? []));
    }
    const { missing: lacks, extra: more } = sameSet(env, contract[name]);
    if (lacks.length) report(helpersFile, `traits.${name} does not give ${lacks}`);
    if (more.length) report(helpersFile, `traits.${name} gives ${more}, which the contract does not ask for`);
  }
}

const servicesValues = isRecord(values) ? values.services : undefined;
if (!isRecord(servicesValues)) report(chartDir, 'values.yaml has no services');
else {
  const { missing, extra } = sameSet(Object.keys(servicesValues), services);
  if (missing.length || extra.length) report(chartDir, `values.services: missing ${missing} extra ${extra}`);
  for (const [name, svc] of Object.entries(servicesValues)) {
    const hpa = isRecord(svc) ? svc.autoscaling : undefined;
    if (
      !isRecord(hpa) ||
      !['enabled', 'minReplicas', 'maxReplicas', 'targetCPUUtilizationPercentage'].every((k) => k in hpa)
    )
      report(chartDir, `values.services.${name}.autoscaling is incomplete`);
    else if (Number(hpa.minReplicas) > Number(hpa.maxReplicas))
      report(chartDir, `services.${name}: minReplicas > maxReplicas`);
    if (
      !isRecord(svc) ||
      !['replicas', 'resources', 'podDisruptionBudget', 'extraEnv', 'podAnnotations', 'probes'].every((k) => k in svc)
    )
      report(
        chartDir,
        `values.services.${name} lacks replicas, resources, podDisruptionBudget, extraEnv, podAnnotations or probes`,
      );
  }
}

// The Secret holds every key read from it, and nothing else.
const secretFile = join(templateDir, 'secret.yaml');
const secretKeys = [...readFileSync(secretFile, 'utf8').matchAll(/^ {2}([A-Z][A-Z0-9_]*):/gm)].map((m) => m[1] ?? '');
const readKeys = new Set([...helpers.matchAll(/"key" "([A-Z][A-Z0-9_]*)"/g)].map((m) => m[1] ?? ''));
if (isRecord(traits)) {
  for (const t of Object.values(traits))
    if (isRecord(t) && typeof t.database === 'string' && t.database) readKeys.add(t.database);
}
const secretDiff = sameSet(secretKeys, readKeys);
if (secretDiff.missing.length) report(secretFile, `pods read ${secretDiff.missing}, which the Secret does not hold`);
if (secretDiff.extra.length) report(secretFile, `the Secret holds ${secretDiff.extra}, which no pod reads`);

// Every secret variable may come from a Secret of the user's own: the table names its Secret and key in
// values.yaml, the chart's Secret leaves it out under the same condition, and pods read it through the table.
const sourceLines = [
  ...helpers.matchAll(/set \$own "([A-Z][A-Z0-9_]*)" \(list \.Values\.([A-Za-z0-9_.]+) \.Values\.([A-Za-z0-9_.]+)\)/g),
];
const sources = new Map(sourceLines.map((m) => [m[1] ?? '', { name: m[2] ?? '', key: m[3] ?? '' }]));
const sourceDiff = sameSet(sources.keys(), secretKeys);
if (sourceDiff.missing.length) report(helpersFile, `secretSources lacks ${sourceDiff.missing}`);
if (sourceDiff.extra.length)
  report(helpersFile, `secretSources names ${sourceDiff.extra}, which the Secret does not hold`);
const valueAt = (path: string): unknown =>
  path.split('.').reduce<unknown>((node, k) => (isRecord(node) ? node[k] : undefined), values);
for (const [variable, source] of sources) {
  if (valueAt(source.name) !== '')
    report(chartDir, `values ${source.name} (${variable}'s Secret) should default to ''`);
  const key = valueAt(source.key);
  if (typeof key !== 'string' || key === '') report(chartDir, `values ${source.key} (${variable}'s key) is not a key`);
}
{
  // Each key of the chart's Secret sits under `{{- if not .Values.<its Secret> }}`.
  const conditions: string[] = [];
  for (const line of readFileSync(secretFile, 'utf8').split('\n')) {
    const open = /{{-?\s*if\s+(.*?)\s*-?}}/.exec(line);
    if (open) conditions.push(open[1] ?? '');
    else if (/{{-?\s*end\s*-?}}/.test(line)) conditions.pop();
    const key = /^ {2}([A-Z][A-Z0-9_]*):/.exec(line)?.[1];
    const source = key ? sources.get(key) : undefined;
    if (key && source && conditions.at(-1) !== `not .Values.${source.name}`)
      report(secretFile, `${key} is not left out when .Values.${source.name} is set`);
  }
}
if (!/secretKeyRef:\s*\n\s*{{- include "ziti-edge\.secretRef" \. (\| trim )?\| nindent \d+ }}/.test(helpers))
  report(helpersFile, 'ziti-edge.secretEnv does not read through ziti-edge.secretRef');

// Probes: complete chart-wide; a service overrides only known probes and fields; the Deployment reads each.
const probeFields = ['periodSeconds', 'timeoutSeconds', 'failureThreshold'];
const probeKinds = ['startup', 'liveness', 'readiness'];
const chartProbes = isRecord(values) ? values.probes : undefined;
const deploymentFile = join(templateDir, 'deployment.yaml');
const deployment = readFileSync(deploymentFile, 'utf8');
for (const kind of probeKinds) {
  const probe = isRecord(chartProbes) ? chartProbes[kind] : undefined;
  for (const field of probeFields) {
    if (!isRecord(probe) || !Number.isInteger(probe[field]) || Number(probe[field]) < 1)
      report(chartDir, `values probes.${kind}.${field} is not a positive integer`);
    if (!deployment.includes(`$probes.${kind}.${field}`))
      report(deploymentFile, `does not read ${kind}.${field} of the merged probes`);
  }
}
if (isRecord(servicesValues)) {
  for (const [name, svc] of Object.entries(servicesValues)) {
    const overrides = isRecord(svc) ? svc.probes : undefined;
    if (!isRecord(overrides)) continue;
    for (const [kind, fields] of Object.entries(overrides)) {
      if (!probeKinds.includes(kind)) report(chartDir, `services.${name}.probes.${kind}: no such probe`);
      else if (isRecord(fields))
        for (const f of Object.keys(fields))
          if (!probeFields.includes(f)) report(chartDir, `services.${name}.probes.${kind}.${f}: no such field`);
    }
  }
}

// Metrics: the scrape annotations, switched by values metrics.scrapeAnnotations, name the health port (where
// the service host serves /metrics) and reach the pod template, the user's own annotations winning.
{
  const metricsValues = isRecord(values) ? values.metrics : undefined;
  if (!isRecord(metricsValues) || typeof metricsValues.scrapeAnnotations !== 'boolean')
    report(chartDir, 'values metrics.scrapeAnnotations is not a boolean');
  const healthPort = /- name: HEALTH_PORT\n\s+value: "(\d+)"/.exec(helpers)?.[1];
  const containerPort = /- name: health\n\s+containerPort: (\d+)/.exec(deployment)?.[1];
  if (!healthPort || healthPort !== containerPort)
    report(deploymentFile, `the health containerPort ${containerPort} is not HEALTH_PORT ${healthPort}`);
  const block = /{{-? if \$\.Values\.metrics\.scrapeAnnotations }}([\s\S]*?){{-? end }}/.exec(deployment);
  const applied = deployment.indexOf('{{- with $annotations }}');
  if (!block) report(deploymentFile, 'no scrape annotations under .Values.metrics.scrapeAnnotations');
  else {
    const wanted = {
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': healthPort,
      'prometheus.io/path': '/metrics',
    };
    for (const [k, v] of Object.entries(wanted))
      if (!block[1]!.includes(`"${k}" "${v}"`)) report(deploymentFile, `the scrape annotations lack ${k}: ${v}`);
    if (!/\$_ := merge \$annotations \(dict /.test(block[1]!))
      report(deploymentFile, 'the scrape annotations are not merged under the pod annotations');
    if (applied < 0 || applied < block.index)
      report(deploymentFile, 'the scrape annotations are set after the pod annotations are written');
  }
  const hostFile = join(deployDir, '..', 'packages', 'platform', 'src', 'service-host.ts');
  if (!readFileSync(hostFile, 'utf8').includes("req.url === '/metrics'"))
    report(hostFile, 'the health listener does not serve /metrics');
}

// values.schema.json: values.yaml passes; values the schema exists to refuse are refused.
const schemaFile = join(chartDir, 'values.schema.json');
try {
  const validate = new Ajv({ allErrors: true, strict: false }).compile(JSON.parse(readFileSync(schemaFile, 'utf8')));
  if (!validate(values))
    for (const e of validate.errors ?? []) report(schemaFile, `values.yaml: ${e.instancePath} ${e.message ?? ''}`);
  const changed = (change: (v: Record<string, unknown>) => void) => {
    const copy = structuredClone(values) as Record<string, unknown>;
    change(copy);
    return copy;
  };
  const svc = (v: Record<string, unknown>, name: string) =>
    (v.services as Record<string, Record<string, unknown>>)[name]!;
  const refused: [string, Record<string, unknown>][] = [
    ['an unknown service', changed((v) => ((v.services as Record<string, unknown>).gatway = {}))],
    ['replicas 0', changed((v) => (svc(v, 'auth').replicas = 0))],
    ['an unknown probe field', changed((v) => (svc(v, 'policy').probes = { startup: { initialDelay: 5 } }))],
    ['a gateway Service type', changed((v) => ((v.gateway as { service: { type: string } }).service.type = 'Ingress'))],
    ['a NATS URL of another scheme', changed((v) => ((v.nats as { url: string }).url = 'http://nats:4222'))],
    ['an advertised address without port', changed((v) => (v.advertisedAddress = 'ziti.example.com'))],
    ['scrape annotations that are not a switch', changed((v) => (v.metrics = { scrapeAnnotations: 'yes' }))],
    ['an unknown metrics setting', changed((v) => (v.metrics = { scrapeAnnotations: true, port: 9090 }))],
  ];
  for (const [what, sample] of refused) if (validate(sample)) report(schemaFile, `does not refuse ${what}`);
} catch (err) {
  report(schemaFile, `unreadable: ${(err as Error).message}`);
}

// NOTES.txt says how to log in, with the password from wherever it is kept.
const notesFile = join(templateDir, 'NOTES.txt');
const notes = readFileSync(notesFile, 'utf8');
if (!/ziti edge login \{\{ \.Values\.advertisedAddress \}\}/.test(notes))
  report(notesFile, 'does not say how to log in');
if (!notes.includes('include "ziti-edge.secretRef" (dict "root" . "key" "ZITI_ADMIN_PASSWORD")'))
  report(notesFile, "does not read the admin password's Secret through ziti-edge.secretRef");

// `helm test`: a test hook that asks every service.
const testFile = join(templateDir, 'tests', 'release-test.yaml');
const releaseTest = templates.includes(testFile) ? readFileSync(testFile, 'utf8') : '';
if (!/helm\.sh\/hook: test\b/.test(releaseTest)) report(testFile, 'no `helm test` hook');
for (const name of services.filter((n) => n !== 'gateway'))
  if (!releaseTest.includes(`"${name}"`)) report(testFile, `does not ask ${name}'s /readyz`);
if (!releaseTest.includes('/edge/client/v1/version')) report(testFile, "does not ask the gateway's /version");

// 4. compose.yaml gives each service the contract's environment.
const composeFile = join(deployDir, 'compose.yaml');
const compose = parsed.get(composeFile);
const composeServices = isRecord(compose) && isRecord(compose.services) ? compose.services : undefined;
if (!composeServices) report(composeFile, 'no services');
else {
  const images = new Set<string>();
  for (const name of services) {
    const svc = composeServices[name];
    if (!isRecord(svc)) {
      report(composeFile, `service ${name} is missing`);
      continue;
    }
    images.add(String(svc.image));
    const env = isRecord(svc.environment) ? Object.keys(svc.environment) : [];
    const lacks = contract[name].filter((v) => !env.includes(v));
    if (lacks.length) report(composeFile, `${name} lacks ${lacks}`);
    const unknown = env.filter((v) => !known.has(v));
    if (unknown.length) report(composeFile, `${name} sets ${unknown}, which no service reads`);
    if (!isRecord(svc.healthcheck)) report(composeFile, `${name} has no healthcheck`);
  }
  if (images.size !== 1) report(composeFile, `the services use ${images.size} images, not one`);
  for (const [name, svc] of Object.entries(composeServices)) {
    const deps = isRecord(svc) && isRecord(svc.depends_on) ? Object.keys(svc.depends_on) : [];
    for (const dep of deps) if (!(dep in composeServices)) report(composeFile, `${name} depends on unknown ${dep}`);
  }
}

// 5. The entrypoint chooses among exactly the five services.
const entrypointFile = join(deployDir, 'docker-entrypoint.sh');
const entrypoint = readFileSync(entrypointFile, 'utf8');
for (const pattern of entrypoint.matchAll(/^\s*(gateway[^)]*)\)/gm)) {
  const names = (pattern[1] ?? '').split('|').map((s) => s.trim());
  const { missing, extra } = sameSet(names, services);
  if (missing.length || extra.length) report(entrypointFile, `case ${pattern[1]}: missing ${missing} extra ${extra}`);
}

if (problems.length > 0) {
  console.error(problems.map((p) => `deploy check: ${p}`).join('\n'));
  console.error(`deploy check: ${problems.length} problem(s)`);
  process.exit(1);
}
console.log(`deploy check: ok (${parsed.size} YAML files, ${templates.length} templates)`);
