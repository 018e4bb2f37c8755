import type { OnResolveArgs, OnResolveResult, Plugin, PluginBuild } from 'esbuild';

export interface WorkspacePluginOptions {
  /** The plugin's name in esbuild's messages. */
  name: string;
  /** The repository root: sources are kept in `read` by their path below it. */
  root: string;
  /** Every source the build loads (repository path → content), filled as esbuild loads them. */
  read: Map<string, Buffer>;
  /**
   * What `import.meta.url` of a bundled module becomes: its file URL in the tree (`'source'`), or its
   * repository path relative to the bundle that holds it (`'bundle'`: the bundles' folder mirrors the
   * repository for what a module finds beside itself).
   */
  moduleUrl: 'source' | 'bundle';
  /** A bare import outside the workspace and node's built-ins; default: it stays an import. */
  external?: (args: OnResolveArgs) => OnResolveResult | undefined;
  /** Sees each source as it is loaded (absolute path, text before `import.meta.url` is rewritten). */
  onSource?: (path: string, text: string) => void;
  /** More hooks, registered before the plugin's own, so that they come first. */
  setup?: (build: PluginBuild) => void;
}

/**
 * sha256 over each file's path and content (each path once, in order), after `seed`: what a bundle is
 * made from. `undefined` when a file is gone (`contentOf` throws or gives undefined).
 */
export declare function fingerprint(
  files: Iterable<string>,
  contentOf: (file: string) => Buffer | undefined,
  seed?: string,
): string | undefined;

/** The loader of each source by its ending (`js` for any other). */
export declare const loaders: Readonly<Record<string, 'ts' | 'js' | 'json'>>;

/** A path with `/` between its parts, as repository paths are written. */
export declare function toPosix(path: string): string;

export declare function workspacePlugin(options: WorkspacePluginOptions): Plugin;
