import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  type Answer,
  type Report,
  type Step,
  type StepResult,
  type Target,
  IdNamer,
  Normaliser,
  buildReport,
  declaredVariables,
  formatReport,
  loadKnownDifferences,
  runSteps,
} from '../support/differential.ts';
import {
  genericSteps,
  lifecycleSteps,
  mainSteps,
  makeMaterials,
  seedVariables,
} from '../support/differential-steps.ts';
import { type Embedded, startEmbedded } from '../support/embedded.ts';
import { createHttpClient } from '../support/http.ts';
import { loadSpecValidator } from '../support/spec-validator.ts';
import { type ZitiPeers, createZitiPeers, describeWithZiti } from '../support/ziti-peers.ts';

/**
 * The differential conformance suite (issue 31 §1): the reference controller (OpenZiti v1.1.9, run
 * by test/support/ziti-peers.ts) and this controller (the embedded composition, one process) get the
 * same request sequence (test/support/differential-steps.ts: a table of steps, then the generic cases
 * every operation gets, then the lifecycle steps) and their answers are compared after normalising
 * ids, timestamps, tokens, certificates, versions and addresses (test/support/differential.ts).
 *
 * Every operation of the contracts' table must be exercised; every difference must be listed, with
 * its category and reason, in the table of docs/reference-differences.md (a difference not listed
 * fails); the reference must answer the steps the table marks with `expect` as it says. Prints one
 * row per operation and a summary line, and writes every difference, listed or not, to
 * `bench/results/differential-<date>.json` (`DIFFERENTIAL_RESULTS_DIR`; ignored by git).
 * `npm run differential` runs only this suite.
 */
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const listPath = join(repoRoot, 'docs', 'reference-differences.md');
const resultsDir = process.env.DIFFERENTIAL_RESULTS_DIR ?? join(repoRoot, 'bench', 'results');

describeWithZiti('differential conformance: OpenZiti v1.1.9 and this controller', (ziti) => {
  let peers: ZitiPeers | undefined;
  let ours: Embedded | undefined;
  let report: Report;
  let results: StepResult[] = [];

  beforeAll(async () => {
    const started = Date.now();
    peers = createZitiPeers({ ziti: ziti.path, prefix: 'ziti-differential-' });
    const [materials, reference, embedded] = await Promise.all([
      makeMaterials(),
      peers.startReferenceController({ pkiKeyAlg: 'EC' }),
      startEmbedded(),
    ]);
    ours = embedded;
    // startEmbedded logs its admin in once; so does the reference's, so both hold the same API sessions.
    await reference.login();
    const startedMs = Date.now() - started;
    const validator = loadSpecValidator();
    const addresses = (apiPort: number, ctrlPort: number): [string, string][] => [
      [`127.0.0.1:${apiPort}`, '<api-address>'],
      [`localhost:${apiPort}`, '<api-address>'],
      [`127.0.0.1:${ctrlPort}`, '<ctrl-address>'],
      [`localhost:${ctrlPort}`, '<ctrl-address>'],
    ];
    const targets: { reference: Target; ours: Target } = {
      reference: {
        side: 'reference',
        send: createHttpClient(reference.apiUrl, reference.caPem),
        vars: seedVariables(materials, { username: reference.adminUsername, password: reference.adminPassword }),
        norm: new Normaliser(addresses(reference.apiPort, reference.ctrlPort)),
      },
      ours: {
        side: 'ours',
        send: createHttpClient(`https://127.0.0.1:${embedded.port}`, embedded.caPems.join('')),
        vars: seedVariables(materials, { username: embedded.adminUsername, password: embedded.adminPassword }),
        norm: new Normaliser(addresses(embedded.port, embedded.ctrlPort)),
      },
    };
    const main = mainSteps(materials);
    const lifecycle = lifecycleSteps(materials);
    const declared = declaredVariables([...main, ...lifecycle], targets.reference.vars.keys());
    const namer = new IdNamer(targets.reference.norm, targets.ours.norm);
    const mainResults = await runSteps(main, targets, validator, declared, namer);

    // Each operation's template: its first happy step (else its first step), with the reference's answer.
    const answers = new Map<Step, Answer>(mainResults.map((r) => [r.step, r.reference]));
    const templates = new Map<string, { step: Step; reference: Answer }>();
    for (const step of [...main, ...lifecycle].filter((s) => s.case === 'happy').concat(main, lifecycle)) {
      if (templates.has(step.op)) continue;
      const answer = answers.get(step) ?? ({ status: 0, body: undefined } as Answer);
      templates.set(step.op, { step, reference: answer });
    }
    const genericResults = await runSteps(genericSteps(templates), targets, validator, declared, namer);
    const lifecycleResults = await runSteps(lifecycle, targets, validator, declared, namer);
    results = [...mainResults, ...genericResults, ...lifecycleResults];
    const seconds = (Date.now() - started) / 1000;

    report = buildReport(results, loadKnownDifferences(listPath));
    mkdirSync(resultsDir, { recursive: true });
    const file = join(resultsDir, `differential-${new Date().toISOString().slice(0, 10)}.json`);
    writeFileSync(
      file,
      `${JSON.stringify(
        {
          at: new Date().toISOString(),
          seconds,
          startupSeconds: startedMs / 1000,
          cases: report.cases,
          byCategory: report.byCategory,
          unexercised: report.unexercised,
          withoutTemplate: report.withoutTemplate,
          problems: report.problems,
          stale: report.stale.map(({ matcher: _m, ...k }) => k),
          differences: report.differences.map(({ known, ...d }) => ({
            ...d,
            category: known?.category ?? 'unlisted',
            reason: known?.reason,
            listedAt: known ? `docs/reference-differences.md:${known.line}` : undefined,
          })),
          rows: report.rows,
        },
        null,
        2,
      )}\n`,
    );
    if (process.env.DIFFERENTIAL_ANSWERS === '1') {
      const answersFile = file.replace(/\.json$/, '-answers.json');
      const slim = (a: Answer) => ({
        status: a.status,
        contentType: a.contentType,
        body: a.body,
        raw: a.json,
        spec: a.specError,
      });
      const all = results.map((r) => ({
        op: r.step.op,
        case: r.step.case,
        reference: slim(r.reference),
        ours: slim(r.ours),
      }));
      writeFileSync(answersFile, `${JSON.stringify(all, null, 1)}\n`);
    }
    console.log(
      `${formatReport(report, seconds)}\n(startup ${(startedMs / 1000).toFixed(0)} s; every difference in ${file})`,
    );
  }, 900_000);

  afterAll(async () => {
    await ours?.stop();
    await peers?.cleanup();
  });

  it('exercises every operation of both APIs, each with at least one step of its own', () => {
    expect(report.unexercised).toEqual([]);
    expect(report.withoutTemplate).toEqual([]);
  });

  it('the reference answers the table’s steps as the table expects (the steps test what they say)', () => {
    expect(report.problems.map((p) => `${p.op} ${p.case}: ${p.problem}`)).toEqual([]);
  });

  it('every difference from the reference is listed, with its reason, in docs/reference-differences.md', () => {
    expect(
      report.unlisted.map(
        (d) =>
          `${d.op} | ${d.case} | ${d.path}: reference ${JSON.stringify(d.reference)}, ours ${JSON.stringify(d.ours)}`,
      ),
    ).toEqual([]);
  });
});
