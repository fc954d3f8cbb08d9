/**
 * The environment of a process that runs ONNX Runtime's large graphs (the split worker process,
 * and the benchmarks that measure it). Staged graphs run without ORT's arena (one per session
 * would hold every stage's peak at once), so every tensor is a fresh malloc. glibc serves large
 * ones with mmap (always above 32 MiB, and above 64 MiB in a thread's own arena) and unmaps them
 * on free, so every chunk page-faults gigabytes in again: SCNet-large spent 18 % of its CPU time
 * in the kernel. One arena that keeps blocks up to 128 MiB in its heap reuses them for the next
 * stage; a higher threshold was as fast and held more memory (docs/benchmarks.md, "Split workers
 * and the allocator"). glibc reads these only when a process starts.
 */
export const ORT_MALLOC_ENV: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: '1',
  MALLOC_MMAP_THRESHOLD_: String(2 ** 27),
  // Memory freed at the top of the heap is kept up to this much, so the next stage reuses it.
  MALLOC_TOP_PAD_: String(2 ** 28),
};

/**
 * `env` with the allocator settings added; a user's own MALLOC_* settings replace them. A user's
 * GLIBC_TUNABLES passes through as any other variable: `glibc.malloc.hugetlb=1` puts the workers'
 * large tensors on transparent huge pages, which speeds MDX23C and SCNet but slows Demucs and the
 * bundled models, so it is the user's choice, not a default (docs/benchmarks.md).
 */
export function ortProcessEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const ownSettings = Object.keys(env).some((name) => name.startsWith('MALLOC_'));
  return ownSettings ? { ...env } : { ...env, ...ORT_MALLOC_ENV };
}
