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
 * Transparent huge pages for those tensors: with this tunable glibc (2.35 and later) marks its
 * heap and its mmapped blocks MADV_HUGEPAGE, so a fresh 100-MiB tensor is 50 faults of 2 MiB instead of 25,600 of 4 KiB: MDX23C
 * faulted 1.7 million pages in 3 chunks (11 s of kernel time). Where the kernel's THP setting is
 * `never` it changes nothing, and an older glibc ignores the name (docs/benchmarks.md).
 */
export const ORT_GLIBC_TUNABLES = 'glibc.malloc.hugetlb=1';

/** `env` with the allocator settings added; a user's own MALLOC_* settings, and GLIBC_TUNABLES, win. */
export function ortProcessEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const ownSettings = Object.keys(env).some((name) => name.startsWith('MALLOC_'));
  return {
    ...(ownSettings ? {} : ORT_MALLOC_ENV),
    ...(env['GLIBC_TUNABLES'] === undefined ? { GLIBC_TUNABLES: ORT_GLIBC_TUNABLES } : {}),
    ...env,
  };
}
