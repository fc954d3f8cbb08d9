/*
 * Live heap bytes of a process, counted at malloc and free (a diagnosis aid, not part of stemsplit).
 * The peak RSS of a split worker is what its tensors hold plus what glibc keeps of freed memory;
 * this tells the two apart. It counts every malloc, calloc, realloc, posix_memalign, aligned_alloc
 * and memalign by malloc_usable_size, prints each process's peak of live bytes when it exits, and
 * with MALLOC_LIVE_LOG=<prefix> writes every change of 4 MiB or more to <prefix>.<pid>
 * ("seconds pointer bytes live-after").
 *
 *   gcc -O2 -shared -fPIC -o /tmp/malloc-live.so scripts/bench/malloc-live.c -ldl
 *   LD_PRELOAD=/tmp/malloc-live.so MALLOC_LIVE_LOG=/tmp/live node --import tsx scripts/bench/mdx23c.ts --seconds 3
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
static void *(*real_malloc)(size_t), *(*real_calloc)(size_t, size_t), *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t), *(*real_memalign)(size_t, size_t);
static _Atomic long live, peak;
static int logfd = -1;
static char boot[1 << 16]; static size_t bootUsed;
static _Atomic int initing;
static void init(void) {
  if (real_malloc) return;
  initing = 1;
  real_malloc = dlsym(RTLD_NEXT, "malloc"); real_calloc = dlsym(RTLD_NEXT, "calloc");
  real_realloc = dlsym(RTLD_NEXT, "realloc"); real_free = dlsym(RTLD_NEXT, "free");
  real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign"); real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
  real_memalign = dlsym(RTLD_NEXT, "memalign");
  const char *f = getenv("MALLOC_LIVE_LOG");
  if (f) { char name[512]; snprintf(name, sizeof name, "%s.%d", f, getpid()); logfd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644); }
  initing = 0;
}
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static void note(void *p, long delta) {
  long v = atomic_fetch_add(&live, delta) + delta;
  long pk = peak; while (v > pk && !atomic_compare_exchange_weak(&peak, &pk, v)) {}
  if (logfd >= 0 && (delta >= (1 << 22) || delta <= -(1 << 22))) {
    char line[128]; int n = snprintf(line, sizeof line, "%.4f %p %ld %ld\n", now(), p, delta, v); write(logfd, line, n);
  }
}
static int isBoot(void *p) { return (char *)p >= boot && (char *)p < boot + sizeof boot; }
void *malloc(size_t n) { if (!real_malloc) { if (initing) { void *p = boot + bootUsed; bootUsed += (n + 15) & ~15; return p; } init(); } void *p = real_malloc(n); if (p) note(p, malloc_usable_size(p)); return p; }
void *calloc(size_t a, size_t b) { if (!real_calloc) { if (initing) { void *p = boot + bootUsed; bootUsed += (a * b + 15) & ~15; return p; } init(); } void *p = real_calloc(a, b); if (p) note(p, malloc_usable_size(p)); return p; }
void free(void *p) { if (!p || isBoot(p)) return; init(); note(p, -(long)malloc_usable_size(p)); real_free(p); }
void *realloc(void *p, size_t n) { init(); if (isBoot(p)) { void *q = malloc(n); memcpy(q, p, n); return q; } long old = p ? (long)malloc_usable_size(p) : 0; void *q = real_realloc(p, n); if (q) { note(p, -old); note(q, malloc_usable_size(q)); } else if (n == 0) note(p, -old); return q; }
int posix_memalign(void **out, size_t a, size_t n) { init(); int r = real_posix_memalign(out, a, n); if (!r) note(*out, malloc_usable_size(*out)); return r; }
void *aligned_alloc(size_t a, size_t n) { init(); void *p = real_aligned_alloc(a, n); if (p) note(p, malloc_usable_size(p)); return p; }
void *memalign(size_t a, size_t n) { init(); void *p = real_memalign(a, n); if (p) note(p, malloc_usable_size(p)); return p; }
__attribute__((destructor)) static void report(void) { char line[128]; int n = snprintf(line, sizeof line, "malloc-live pid %d: peak live %.0f MiB, end %.0f MiB\n", getpid(), peak / 1048576.0, live / 1048576.0); write(2, line, n); }
