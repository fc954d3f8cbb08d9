/**
 * The environment of a process that runs ONNX Runtime's large graphs (the split worker process,
 * and the benchmarks that measure it): glibc's allocator settings, which glibc reads only when a
 * process starts, so a worker is started with the settings its models' family declares
 * (contract/family.ts `allocator`) and the worker pool keeps a worker for each.
 */

/**
 * `keep-large-blocks`: staged graphs run without ORT's arena (one per session would hold every
 * stage's peak at once), so every tensor is a fresh malloc. glibc serves large ones with mmap
 * (always above 32 MiB, and above 64 MiB in a thread's own arena) and unmaps them on free, so
 * every chunk page-faults gigabytes in again: SCNet-large spent 18 % of its CPU time in the
 * kernel. One arena that keeps blocks up to 128 MiB in its heap reuses them for the next stage; a
 * higher threshold was as fast and held more memory (docs/benchmarks.md, "Split workers and the
 * allocator").
 *
 * `map-large-blocks`: Demucs v2's chain of twelve stages, run on thousands of windows, fragments
 * that heap instead: its tensors, a few MiB each, freed in a different order at each window and
 * split by the stream's own allocations, leave holes the next ones do not fit, so the heap's top
 * rises for good now and then, and the longer the track the higher (its peak 14.9 % higher for 30
 * minutes of audio than for 3). Every block from 1 MiB up mapped on its own and unmapped when
 * freed keeps the heap small and level (4.5 %) and the peak lower, for page faults that cost time,
 * fewer on huge pages (docs/reliability.md, "Every family: memory does not grow with the source's
 * length").
 */
export const ALLOCATOR_PROFILES = {
  'keep-large-blocks': {
    MALLOC_ARENA_MAX: '1',
    MALLOC_MMAP_THRESHOLD_: String(2 ** 27),
    // Memory freed at the top of the heap is kept up to this much, so the next stage reuses it.
    MALLOC_TOP_PAD_: String(2 ** 28),
  },
  'map-large-blocks': {
    MALLOC_ARENA_MAX: '1',
    MALLOC_MMAP_THRESHOLD_: String(2 ** 20),
    // Those blocks on transparent huge pages where the kernel offers them: fewer of the faults each fresh block costs.
    GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1',
  },
} as const satisfies Record<string, Readonly<Record<string, string>>>;

export type AllocatorProfile = keyof typeof ALLOCATOR_PROFILES;

/** The settings a family gets unless its record names others. */
export const DEFAULT_ALLOCATOR: AllocatorProfile = 'keep-large-blocks';

/**
 * `env` with the allocator settings of `profile` added; a user's own MALLOC_* settings replace
 * them all, and a user's GLIBC_TUNABLES replaces the profile's: `glibc.malloc.hugetlb=1`
 * with keep-large-blocks speeds MDX23C and SCNet but slows HTDemucs and the bundled models, so
 * there it is the user's choice (docs/benchmarks.md); map-large-blocks sets it itself.
 */
export function ortProcessEnv(env: NodeJS.ProcessEnv, profile: AllocatorProfile = DEFAULT_ALLOCATOR): NodeJS.ProcessEnv {
  const ownSettings = Object.keys(env).some((name) => name.startsWith('MALLOC_'));
  if (ownSettings) return { ...env };
  const tunables = env['GLIBC_TUNABLES'];
  return { ...env, ...ALLOCATOR_PROFILES[profile], ...(tunables === undefined ? {} : { GLIBC_TUNABLES: tunables }) };
}
