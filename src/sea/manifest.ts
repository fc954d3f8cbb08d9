/**
 * What the standalone executable carries besides its JavaScript: native addons, ffmpeg and
 * the bundled models, each a brotli-compressed SEA asset. The build writes this manifest as
 * one more asset; at start-up the executable reads it to know what to unpack where.
 */

/** The SEA asset holding the manifest (JSON). */
export const MANIFEST_ASSET = 'runtime.json';

/** Where each part lives inside an unpacked runtime dir (relative, `/`-separated). */
export const RUNTIME_LAYOUT = Object.freeze({
  ffmpeg: 'ffmpeg',
  sqliteAddon: 'better-sqlite3/better_sqlite3.node',
  /** Loads `libonnxruntime.so.1` from its own folder (RUNPATH `$ORIGIN`), so both stay side by side. */
  ortAddon: 'onnxruntime/onnxruntime_binding.node',
  modelsDir: 'models',
  /** The split worker process's own bundle (the executable runs it as a worker). */
  splitWorker: 'split-worker.cjs',
});

export interface RuntimeFile {
  /** Path inside the runtime dir, `/`-separated, never absolute nor with `..`. */
  readonly path: string;
  /** The SEA asset holding the brotli-compressed bytes. */
  readonly asset: string;
  /** Uncompressed size: checked when a runtime dir is reused, so a truncated file is noticed. */
  readonly size: number;
  /** File mode, e.g. 0o755 for ffmpeg. */
  readonly mode: number;
}

export interface RuntimeManifest {
  readonly version: string;
  /** Hash over every file's path, mode and uncompressed bytes: names the runtime dir. */
  readonly hash: string;
  readonly files: readonly RuntimeFile[];
}

/** `<version>-<hash>`: a new build with different natives or models never reuses an old dir. */
export function runtimeDirName(manifest: RuntimeManifest): string {
  return `${manifest.version}-${manifest.hash}`;
}

export function parseManifest(text: string): RuntimeManifest {
  const manifest = JSON.parse(text) as RuntimeManifest;
  if (typeof manifest.version !== 'string' || !/^[0-9a-f]{16,64}$/.test(manifest.hash) || !Array.isArray(manifest.files)) {
    throw new Error('the executable carries a malformed runtime manifest');
  }
  for (const file of manifest.files) checkRelativePath(file.path);
  return manifest;
}

/** A manifest path must stay inside the runtime dir. */
export function checkRelativePath(path: string): string {
  const parts = path.split('/');
  if (path === '' || path.startsWith('/') || parts.some((part) => part === '' || part === '.' || part === '..')) {
    throw new Error(`not a relative runtime path: ${JSON.stringify(path)}`);
  }
  return path;
}
