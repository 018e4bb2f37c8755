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
 * - the entrypoint knows the seven services;
 * - the image (issue 25): the runtime stage holds the bundles and the pruned production node_modules the build
 *   stage made with deploy/bundles.ts, nothing else (no sources, no npm install, no tsx, TypeScript, esbuild or
 *   vitest), runs as a user that is not root, and starts `node <flags> dist/<service>.mjs` with each service's
 *   flags and the environment of `serviceRuntime`, from the entrypoint and from the chart alike;
 * - the ServiceMonitor renders only under values metrics.serviceMonitor.enabled (off by default), scrapes
 *   `/metrics` on the port `health` of Services that name it for every service (the gateway's own health
 *   Service included), at the interval and with the labels of values; values and NOTES.txt say Redis needs
 *   persistence or replicas;
 * - fabric (the router edge): its pods listen on the control port the contract gives it, a plain-TCP Service
 *   of the type values fabric.service.type names carries that port (TLS passed through), NOTES.txt gives
 *   routers their `ctrl.endpoint`, and compose publishes the port on the loopback address only; fabric, like
 *   the gateway, has no database and so no migration.
 * It renders nothing: a template error that only shows when rendering is not caught here.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { bundleEntries, serviceRuntime, toolEntries } from './bundles.ts';

const deployDir = dirname(fileURLToPath(import.meta.url));
const chartDir = join(deployDir, 'helm', 'ziti-edge');
const services = ['gateway', 'auth', 'pki-enrollment', 'policy', 'inventory', 'audit', 'fabric'] as const;
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
  // The advertised address names the controller in the change feed (event_src_id), as `/controllers` does.
  audit: [...common, 'AUDIT_DATABASE_URL', 'ZITI_ADVERTISED_ADDRESS', 'ZITI_AUDIT_RETENTION_DAYS'],
  // The router edge: the control port routers dial (TLS with client certificates), the circuits in Redis.
  fabric: [...common, 'REDIS_URL', 'ZITI_CTRL_BIND', 'ZITI_CTRL_PORT', 'ZITI_CTRL_ADVERTISED_ADDRESS'],
};
/** The services without a database: no migration Job, no `migrate` step in compose. */
const withoutDatabase: readonly ServiceName[] = ['gateway', 'fabric'];
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
  'ZITI_CTRL_LEASE_SECONDS',
  'ZITI_CTRL_ROUTE_TIMEOUT_MS',
  'ZITI_CTRL_MAX_CONNECTIONS',
  'ZITI_CTRL_MAX_MESSAGE_BYTES',
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
    auditRetention: ['ZITI_AUDIT_RETENTION_DAYS'],
    control: ['ZITI_CTRL_BIND', 'ZITI_CTRL_PORT', 'ZITI_CTRL_ADVERTISED_ADDRESS'],
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
    const owns = typeof t.database === 'string' && t.database !== '';
    if (owns === withoutDatabase.includes(name))
      report(helpersFile, `traits.${name}.database: ${owns ? 'it has no database' : 'it owns a database'}`);
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
      !['nodeArgs', 'replicas', 'resources', 'podDisruptionBudget', 'extraEnv', 'podAnnotations', 'probes'].every(
        (k) => k in svc,
      )
    )
      report(
        chartDir,
        `values.services.${name} lacks nodeArgs, replicas, resources, podDisruptionBudget, extraEnv, podAnnotations or probes`,
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
    ['a fabric Service type', changed((v) => ((v.fabric as { service: { type: string } }).service.type = 'Ingress'))],
    ['a fabric Service port of 0', changed((v) => ((v.fabric as { service: { port: number } }).service.port = 0))],
    [
      'a fabric advertised address with a scheme',
      changed((v) => ((v.fabric as { advertisedAddress: string }).advertisedAddress = 'tls:ctrl.example.com:6262')),
    ],
    [
      'a fabric advertised address without port',
      changed((v) => ((v.fabric as { advertisedAddress: string }).advertisedAddress = 'ctrl.example.com')),
    ],
    ['an unknown fabric setting', changed((v) => ((v.fabric as Record<string, unknown>).leaseSeconds = 15))],
    ['a NATS URL of another scheme', changed((v) => ((v.nats as { url: string }).url = 'http://nats:4222'))],
    ['an advertised address without port', changed((v) => (v.advertisedAddress = 'ziti.example.com'))],
    ['scrape annotations that are not a switch', changed((v) => (v.metrics = { scrapeAnnotations: 'yes' }))],
    ['an unknown metrics setting', changed((v) => (v.metrics = { scrapeAnnotations: true, port: 9090 }))],
    [
      'a ServiceMonitor switch that is not a boolean',
      changed((v) => (v.metrics = { scrapeAnnotations: true, serviceMonitor: { enabled: 'yes' } })),
    ],
    [
      'a ServiceMonitor interval without a unit',
      changed((v) => (v.metrics = { scrapeAnnotations: true, serviceMonitor: { enabled: true, interval: '30' } })),
    ],
    ['a node flag that is not a flag', changed((v) => (svc(v, 'audit').nodeArgs = ['max-semi-space-size=2']))],
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
  // `migrate` runs the migrations of exactly the services that own a database.
  const migrate = composeServices.migrate;
  const loop = /for s in ([a-z -]+); do/.exec(
    isRecord(migrate) && Array.isArray(migrate.command) ? migrate.command.join(' ') : '',
  );
  if (!loop) report(composeFile, 'migrate does not loop over the services');
  else {
    const { missing, extra } = sameSet(
      loop[1]!.trim().split(/\s+/),
      services.filter((n) => !withoutDatabase.includes(n)),
    );
    if (missing.length || extra.length) report(composeFile, `migrate: missing ${missing} extra ${extra}`);
  }
  // fabric: its control port published on the loopback address only, after NATS and Redis.
  const fabric = composeServices.fabric;
  if (isRecord(fabric)) {
    const port = isRecord(fabric.environment) ? String(fabric.environment.ZITI_CTRL_PORT) : '';
    const ports = Array.isArray(fabric.ports) ? fabric.ports.map(String) : [];
    if (ports.length !== 1 || ports[0] !== `127.0.0.1:${port}:${port}`)
      report(composeFile, `fabric does not publish its control port ${port} on 127.0.0.1 only: ${ports}`);
    const deps = isRecord(fabric.depends_on) ? Object.keys(fabric.depends_on) : [];
    for (const dep of ['nats', 'redis'])
      if (!deps.includes(dep)) report(composeFile, `fabric does not depend on ${dep}`);
  }
}

// 5. The entrypoint chooses among exactly the six services.
const entrypointFile = join(deployDir, 'docker-entrypoint.sh');
const entrypoint = readFileSync(entrypointFile, 'utf8');
for (const pattern of entrypoint.matchAll(/^\s*(gateway\s*\|[^)]*)\)/gm)) {
  const names = (pattern[1] ?? '').split('|').map((s) => s.trim());
  const { missing, extra } = sameSet(names, services);
  if (missing.length || extra.length) report(entrypointFile, `case ${pattern[1]}: missing ${missing} extra ${extra}`);
}

// 6. The image: bundles and a pruned production tree, run as a user that is not root, no compile at start.
const dockerfileFile = join(deployDir, 'Dockerfile');
{
  const lines = readFileSync(dockerfileFile, 'utf8')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.trim().startsWith('#'));
  const stages: { name: string; lines: string[] }[] = [];
  for (const line of lines) {
    const from = /^FROM\s+\S+(?:\s+AS\s+(\S+))?/i.exec(line);
    if (from) stages.push({ name: from[1] ?? '', lines: [] });
    else stages.at(-1)?.lines.push(line);
  }
  const runtime = stages.at(-1);
  const build = stages.find((st) => st.name === 'build');
  if (!runtime || runtime.name !== 'runtime') report(dockerfileFile, 'the last stage is not `runtime`');
  if (!build) report(dockerfileFile, 'no `build` stage');
  else if (
    !build.lines.some((l) => /^RUN node --import tsx deploy\/bundles\.ts --out (\S+) --node-modules (\S+)$/.test(l))
  )
    report(
      dockerfileFile,
      'the build stage does not make the bundles and the pruned node_modules with deploy/bundles.ts',
    );
  if (runtime) {
    const instructions = runtime.lines.map((l) => l.trim());
    const users = instructions.filter((l) => /^USER\s/i.test(l)).map((l) => l.split(/\s+/)[1] ?? '');
    const user = users.at(-1);
    if (!user || /^(root|0)(:|$)/.test(user)) report(dockerfileFile, `the runtime stage runs as ${user ?? 'root'}`);
    const userAt = instructions.findIndex((l) => /^USER\s/i.test(l) && l.split(/\s+/)[1] === user);
    const entryAt = instructions.findIndex((l) => /^ENTRYPOINT\s/i.test(l));
    if (entryAt < 0 || userAt > entryAt) report(dockerfileFile, 'USER does not come before the ENTRYPOINT');
    for (const l of instructions) {
      const tooling = /\b(tsx|typescript|tsc|vitest|esbuild|npm (ci|install|i)|yarn|pnpm)\b/.exec(l);
      if (tooling) report(dockerfileFile, `the runtime stage mentions ${tooling[1]}: ${l}`);
      const copy = /^COPY\s+(.*)$/i.exec(l);
      if (!copy) continue;
      const args = copy[1]!.split(/\s+/);
      const sources = args.filter((a) => !a.startsWith('--')).slice(0, -1);
      const fromBuild = args.includes('--from=build');
      const allowed = fromBuild
        ? sources.every((src) => src === '/out/dist' || src === '/out/node_modules')
        : sources.every((src) => src === 'deploy/docker-entrypoint.sh');
      if (!allowed)
        report(
          dockerfileFile,
          `the runtime stage copies more than the bundles, their node_modules and the entrypoint: ${l}`,
        );
    }
    for (const wanted of ['COPY --from=build /out/node_modules ./node_modules', 'COPY --from=build /out/dist ./dist'])
      if (!instructions.includes(wanted)) report(dockerfileFile, `the runtime stage lacks \`${wanted}\``);
    // The operator's command on the PATH, running its bundle (built from apps/ops in the build stage).
    if (
      !instructions.some((l) =>
        l.includes(`printf '#!/bin/sh\\nexec node /app/dist/ziti-edge-ops.mjs "$@"\\n' > /usr/local/bin/ziti-edge-ops`),
      )
    )
      report(
        dockerfileFile,
        'the runtime stage does not put ziti-edge-ops (node /app/dist/ziti-edge-ops.mjs) on the PATH',
      );
    if (!build?.lines.includes('COPY apps/ops ./apps/ops'))
      report(dockerfileFile, 'the build stage does not copy apps/ops, whose bundle is ziti-edge-ops');
    const env = instructions.filter((l) => /^ENV\s/i.test(l)).join(' ');
    for (const [name, value] of Object.entries(serviceRuntime.env))
      if (!new RegExp(`\\b${name}=${value}\\b`).test(env))
        report(dockerfileFile, `the runtime stage does not set ${name}=${value}`);
  }
  const ignore = readFileSync(join(deployDir, 'Dockerfile.dockerignore'), 'utf8');
  if (!/^!deploy\/bundles\.ts$/m.test(ignore))
    report(dockerfileFile, 'Dockerfile.dockerignore does not send deploy/bundles.ts');
  // deploy/bundles.ts imports the esbuild plugin every bundle shares.
  if (!/^!tools\/esbuild-workspace-plugin\.mjs$/m.test(ignore))
    report(dockerfileFile, 'Dockerfile.dockerignore does not send tools/esbuild-workspace-plugin.mjs');
  if (!build?.lines.includes('COPY tools/esbuild-workspace-plugin.mjs ./tools/esbuild-workspace-plugin.mjs'))
    report(
      dockerfileFile,
      'the build stage does not copy tools/esbuild-workspace-plugin.mjs, which deploy/bundles.ts imports',
    );
}
{
  if (!('ziti-edge-ops' in toolEntries)) report(join(deployDir, 'bundles.ts'), 'toolEntries lacks ziti-edge-ops');
  const { missing, extra } = sameSet(Object.keys(bundleEntries), services);
  if (missing.length || extra.length)
    report(join(deployDir, 'bundles.ts'), `bundleEntries: missing ${missing} extra ${extra}`);
  // One line per service gives its node flags, then one exec runs the bundle with them.
  const flags = new Map(
    [...entrypoint.matchAll(/^\s*([a-z-]+)\) NODE_FLAGS="([^"]*)" ;;$/gm)].map((m) => [m[1]!, m[2]!]),
  );
  for (const name of services) {
    const wantedFlags = serviceRuntime.nodeArgs[name].join(' ');
    if (flags.get(name) !== wantedFlags)
      report(
        entrypointFile,
        `${name}: NODE_FLAGS="${flags.get(name) ?? '(none)'}", not serviceRuntime's "${wantedFlags}"`,
      );
  }
  const exec = entrypoint.split('\n').filter((l) => /^\s*exec node\s/.test(l));
  const wanted = 'exec node ${NODE_FLAGS} "dist/${ZITI_SERVICE}.mjs" "$@"';
  if (exec.length !== 1 || exec[0]!.trim() !== wanted)
    report(entrypointFile, `does not end in \`${wanted}\` (the service's bundle, with its flags)`);
  if (
    /\btsx\b|main\.ts/.test(
      entrypoint
        .split('\n')
        .filter((l) => !l.trim().startsWith('#'))
        .join('\n'),
    )
  )
    report(entrypointFile, 'still runs TypeScript');
}

// 7. The chart runs the bundles with the same flags; the ServiceMonitor; Redis persistence.
{
  for (const name of services) {
    const svc = isRecord(servicesValues) ? servicesValues[name] : undefined;
    const nodeArgs = isRecord(svc) ? svc.nodeArgs : undefined;
    if (JSON.stringify(nodeArgs) !== JSON.stringify(serviceRuntime.nodeArgs[name]))
      report(
        chartDir,
        `values services.${name}.nodeArgs ${JSON.stringify(nodeArgs)} are not serviceRuntime's ${JSON.stringify(serviceRuntime.nodeArgs[name])}`,
      );
  }
  const nodeArgsHelper = /{{- define "ziti-edge\.nodeArgs" -}}([\s\S]*?)(?={{- define|$)/.exec(helpers)?.[1] ?? '';
  if (
    !nodeArgsHelper.includes('range (index .root.Values.services .name).nodeArgs') ||
    !nodeArgsHelper.includes('printf "/app/dist/%s.mjs" .name')
  )
    report(helpersFile, 'ziti-edge.nodeArgs does not give the node flags and /app/dist/<service>.mjs');
  const jobsFile = join(templateDir, 'migration-jobs.yaml');
  for (const [file, text, extra] of [
    [deploymentFile, deployment, ''],
    [jobsFile, readFileSync(jobsFile, 'utf8'), '\n\\s+- migrate'],
  ] as const) {
    const run = new RegExp(
      `command: \\["/usr/bin/tini", "--", "node"\\]\\n\\s+args:\\n\\s+{{- include "ziti-edge\\.nodeArgs" \\(dict "root" \\$ "name" \\$name\\) \\| trim \\| nindent \\d+ }}${extra}`,
    );
    if (!run.test(text)) report(file, "the container does not run node on the service's bundle (ziti-edge.nodeArgs)");
    if (/main\.ts|\btsx\b/.test(text)) report(file, 'still names TypeScript sources or tsx');
  }

  const metricsValues = isRecord(values) && isRecord(values.metrics) ? values.metrics : {};
  const monitorValues = isRecord(metricsValues.serviceMonitor) ? metricsValues.serviceMonitor : undefined;
  if (
    !monitorValues ||
    monitorValues.enabled !== false ||
    typeof monitorValues.interval !== 'string' ||
    !isRecord(monitorValues.labels)
  )
    report(chartDir, 'values metrics.serviceMonitor must default to enabled: false, with an interval and labels');
  const monitorFile = join(templateDir, 'servicemonitor.yaml');
  const monitor = templates.includes(monitorFile) ? readFileSync(monitorFile, 'utf8') : '';
  if (!monitor) report(monitorFile, 'missing');
  else {
    // The whole file is one `if` on the switch: nothing before it, nothing after its `end`.
    const actions = [...monitor.matchAll(actionPattern)];
    const first = actions[0];
    let depth = 0;
    let closedAt = -1;
    for (const [i, m] of actions.entries()) {
      const word = (m[2] ?? '').trim().split(/\s+/)[0] ?? '';
      if (['if', 'range', 'with', 'define', 'block'].includes(word)) depth++;
      else if (word === 'end' && --depth === 0 && closedAt < 0) closedAt = i;
    }
    if (
      !first ||
      first.index !== 0 ||
      (first[2] ?? '').trim() !== 'if .Values.metrics.serviceMonitor.enabled' ||
      closedAt !== actions.length - 1 ||
      monitor.slice(actions.at(-1)!.index! + actions.at(-1)![0].length).trim() !== ''
    )
      report(monitorFile, 'does not render only under {{- if .Values.metrics.serviceMonitor.enabled }} … {{- end }}');
    const body = parseYaml(monitor.replace(/{{[\s\S]*?}}/g, 'x').replace(/^\s*x\s*$/gm, ''));
    if (!isRecord(body) || body.apiVersion !== 'monitoring.coreos.com/v1' || body.kind !== 'ServiceMonitor')
      report(monitorFile, 'is not a monitoring.coreos.com/v1 ServiceMonitor');
    if (!/endpoints:\n\s+- port: health\n\s+path: \/metrics\n/.test(monitor))
      report(monitorFile, 'does not scrape /metrics on the port health');
    for (const read of ['.Values.metrics.serviceMonitor.interval', '.Values.metrics.serviceMonitor.labels'])
      if (!monitor.includes(read)) report(monitorFile, `does not read ${read}`);
    if (!/matchLabels:[\s\S]*{{- include "ziti-edge\.metricsLabel" \. \| nindent \d+ }}/.test(monitor))
      report(monitorFile, 'does not select the Services by ziti-edge.metricsLabel');
  }
  // Every service has a Service with the metrics label and a port named health: the non-gateway ones their own,
  // the gateway a second one beside its HTTPS Service.
  const serviceFile = join(templateDir, 'service.yaml');
  const serviceText = readFileSync(serviceFile, 'utf8');
  if (!/{{- if not \$traits\.https }}\n\s+{{- include "ziti-edge\.metricsLabel" \$ \| nindent 4 }}/.test(serviceText))
    report(serviceFile, "the services' health Services do not carry ziti-edge.metricsLabel");
  if (
    !/"component" "gateway-health"[\s\S]*ziti-edge\.metricsLabel[\s\S]*- name: health\n\s+port: 8080\n\s+targetPort: health[\s\S]*selectorLabels" \(dict "root" \. "component" "gateway"\)/.test(
      serviceText,
    )
  )
    report(serviceFile, "no health Service for the gateway's pods (port health, the metrics label)");

  const redisBlock = /^redis:\n([\s\S]*?)^\S/m.exec(readFileSync(join(chartDir, 'values.yaml'), 'utf8'))?.[1] ?? '';
  if (!/persistence/.test(redisBlock) || !/replicas/.test(redisBlock))
    report(chartDir, 'values.yaml does not say at redis that API sessions need persistence or replicas');
  if (!/API sessions live only in Redis: without persistence[\s\S]*or replicas/.test(notes))
    report(notesFile, 'does not say that Redis needs persistence or replicas');
}

// 8. fabric, the router edge: the control port of the contract in its pods, carried by a plain-TCP Service of the
// type values name (TLS passed through: routers authenticate with client certificates), its address in the notes.
{
  const ctrlPort = /- name: ZITI_CTRL_PORT\n\s+value: "(\d+)"/.exec(helpers)?.[1];
  const containerPort = /- name: ctrl\n\s+containerPort: (\d+)/.exec(deployment)?.[1];
  if (!ctrlPort || ctrlPort !== containerPort)
    report(deploymentFile, `the ctrl containerPort ${containerPort} is not ZITI_CTRL_PORT ${ctrlPort}`);
  if (!/{{- if \$traits\.control }}\n\s+# [^\n]*\n\s+- name: ctrl\n/.test(deployment))
    report(deploymentFile, 'the ctrl port is not only on the pods of the service with the control trait');
  if (
    !/- name: ZITI_CTRL_ADVERTISED_ADDRESS\n\s+value: {{ include "ziti-edge\.ctrlAdvertisedAddress" \$root \| quote }}/.test(
      helpers,
    )
  )
    report(helpersFile, 'ZITI_CTRL_ADVERTISED_ADDRESS does not come from ziti-edge.ctrlAdvertisedAddress');
  const fabricValues = isRecord(values) && isRecord(values.fabric) ? values.fabric : undefined;
  const fabricService = fabricValues && isRecord(fabricValues.service) ? fabricValues.service : undefined;
  if (!fabricValues || fabricValues.advertisedAddress !== '')
    report(chartDir, "values fabric.advertisedAddress must default to '' (advertisedAddress's host)");
  if (!fabricService || fabricService.type !== 'ClusterIP' || fabricService.port !== 6262)
    report(chartDir, 'values fabric.service must default to type ClusterIP, port 6262');
  const serviceText = readFileSync(join(templateDir, 'service.yaml'), 'utf8');
  const ctrlService = /"component" "fabric-ctrl"[\s\S]*?(?=\n---|$)/.exec(serviceText)?.[0] ?? '';
  if (!ctrlService) report(join(templateDir, 'service.yaml'), 'no Service for the control port (fabric-ctrl)');
  else {
    for (const [what, pattern] of [
      ['its type from values fabric.service.type', /\n {2}type: {{ \$fabric\.type }}\n/],
      [
        'the port ctrl (values fabric.service.port) over TCP',
        /- name: ctrl\n\s+port: {{ \$fabric\.port }}\n\s+targetPort: ctrl\n\s+protocol: TCP/,
      ],
      ["fabric's pods", /selectorLabels" \(dict "root" \. "component" "fabric"\)/],
    ] as const)
      if (!pattern.test(ctrlService))
        report(join(templateDir, 'service.yaml'), `the fabric-ctrl Service lacks ${what}`);
    if (!/\$fabric := \.Values\.fabric\.service/.test(serviceText))
      report(join(templateDir, 'service.yaml'), 'the fabric-ctrl Service does not read values fabric.service');
  }
  if (!/TLS passes through/.test(notes) || !/endpoint: tls:{{ \$ctrl }}/.test(notes))
    report(notesFile, 'does not give routers their ctrl.endpoint (tls:<address>) and say TLS passes through');
  const jobs = readFileSync(join(templateDir, 'migration-jobs.yaml'), 'utf8');
  if (!jobs.includes('{{- if $traits.database }}'))
    report(join(templateDir, 'migration-jobs.yaml'), 'runs for services without a database');
}

if (problems.length > 0) {
  console.error(problems.map((p) => `deploy check: ${p}`).join('\n'));
  console.error(`deploy check: ${problems.length} problem(s)`);
  process.exit(1);
}
console.log(`deploy check: ok (${parsed.size} YAML files, ${templates.length} templates)`);
