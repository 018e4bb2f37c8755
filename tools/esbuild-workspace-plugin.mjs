// The esbuild plugin of every bundle of the repository: `npm start`'s (apps/standalone/start.mjs),
// ziti-edge-ops's (apps/ops/bundle.mjs) and the services' (deploy/bundles.ts). Plain JavaScript, so
// start.mjs imports it without a TypeScript loader; its types are in esbuild-workspace-plugin.d.mts.
//
// - The workspace (`@ziti/*`) and node's built-ins resolve as esbuild resolves them: the workspace is
//   bundled. Every other bare import stays an import, loaded from node_modules at run time (or is
//   what `external` says of it).
// - Every source is read here and kept in `read` under its repository path: what a bundle is
//   fingerprinted by (the sources it was made from) is what it was made of.
// - Each module keeps its own `import.meta.url` (what it finds beside itself, the migrations, is
//   found relative to it): its URL in the tree (`'source'`) or, for a folder of bundles that mirrors
//   the repository beside them, its repository path relative to the bundle that holds it (`'bundle'`).
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { extname, relative, sep } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * sha256 over each file's path and content (each path once, in order), after `seed`: what a bundle is
 * made from, so a bundle whose files are the same is reused. `undefined` when a file is gone.
 */
export function fingerprint(files, contentOf, seed = '') {
  const hash = createHash('sha256').update(seed);
  for (const f of [...new Set(files)].sort()) {
    let content;
    try {
      content = contentOf(f);
    } catch {
      return undefined;
    }
    if (content === undefined) return undefined;
    hash.update(`\0${f}\0${content.length}\0`).update(content);
  }
  return hash.digest('hex');
}

/** The loader of each source by its ending (`js` for any other). */
export const loaders = { '.ts': 'ts', '.mts': 'ts', '.js': 'js', '.mjs': 'js', '.json': 'json' };

/** A path with `/` between its parts, as repository paths are written. */
export const toPosix = (p) => p.split(sep).join('/');

/**
 * @param {import('./esbuild-workspace-plugin.d.mts').WorkspacePluginOptions} options
 * @returns {import('esbuild').Plugin}
 */
export function workspacePlugin({ name, root, read, moduleUrl, external, onSource, setup }) {
  const urlOf = (path, repoPath) =>
    moduleUrl === 'bundle'
      ? `new URL(${JSON.stringify(`./${repoPath}`)}, import.meta.url).href`
      : JSON.stringify(pathToFileURL(path).href);
  return {
    name,
    setup(b) {
      // First: hooks of the bundle's own (another namespace's loads), which win over the ones below.
      setup?.(b);
      b.onResolve({ filter: /^[^./]/ }, (a) => {
        if (a.path.startsWith('node:') || a.path.startsWith('@ziti/')) return undefined;
        return external ? external(a) : { path: a.path, external: true };
      });
      b.onLoad({ filter: /.*/ }, async (a) => {
        const content = await readFile(a.path);
        const path = toPosix(relative(root, a.path));
        read.set(path, content);
        const text = content.toString('utf8');
        onSource?.(a.path, text);
        return {
          contents: text.replaceAll('import.meta.url', urlOf(a.path, path)),
          loader: loaders[extname(a.path)] ?? 'js',
        };
      });
    },
  };
}
