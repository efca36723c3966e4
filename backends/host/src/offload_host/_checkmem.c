/* _checkmem.c - the allocations of the checking mode (OFFLOAD_HOST_CHECK=1): each one its own
 * mapping, right-aligned against a PROT_NONE guard page after it, so that a kernel reading or
 * writing past its end faults at once; the list of them lets a fault's message name the
 * allocation it ran past (base, size, offset), as compute-sanitizer does for a GPU kernel.
 */
#define _GNU_SOURCE
#include "_native.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct {
  uintptr_t base, size;     /* the allocation */
  uintptr_t map, map_len;   /* its mapping, the guard page last */
} checked_t;

static pthread_mutex_t checked_mu = PTHREAD_MUTEX_INITIALIZER;
static checked_t *checked;
static size_t nchecked, capchecked;

static size_t page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }

void *checked_alloc(size_t size, size_t alignment) {
  size_t page = page_size();
  /* The natural alignment of the size (its lowest set bit, at most 16): an array of n elements
   * of a power-of-two size ends exactly at the guard, so element n faults. */
  size_t align = 16;
  while (align > 1 && size % align) align /= 2;
  if (alignment > align) align = alignment;
  size_t data = (size + page - 1) / page * page + (align > page ? align : 0);
  size_t span = data + page;
  if (size > SIZE_MAX / 2 || span < size) return NULL;
  unsigned char *map = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) return NULL;
  unsigned char *guard = map + data;
  if (mprotect(guard, page, PROT_NONE) != 0) {
    munmap(map, span);
    return NULL;
  }
  uintptr_t base = ((uintptr_t)guard - size) & ~(uintptr_t)(align - 1);
  pthread_mutex_lock(&checked_mu);
  if (nchecked == capchecked) {
    size_t cap = capchecked ? 2 * capchecked : 64;
    checked_t *grown = realloc(checked, cap * sizeof *checked);
    if (grown == NULL) {
      pthread_mutex_unlock(&checked_mu);
      munmap(map, span);
      return NULL;
    }
    checked = grown;
    capchecked = cap;
  }
  checked[nchecked++] = (checked_t){base, size, (uintptr_t)map, span};
  pthread_mutex_unlock(&checked_mu);
  return (void *)base;
}

int checked_free(void *address) {
  pthread_mutex_lock(&checked_mu);
  for (size_t i = 0; i < nchecked; ++i) {
    if (checked[i].base != (uintptr_t)address) continue;
    checked_t gone = checked[i];
    checked[i] = checked[--nchecked];
    pthread_mutex_unlock(&checked_mu);
    return munmap((void *)gone.map, gone.map_len);
  }
  pthread_mutex_unlock(&checked_mu);
  errno = EINVAL;
  return -1;
}

void checked_describe(const void *address, char *out, size_t n) {
  uintptr_t addr = (uintptr_t)address;
  pthread_mutex_lock(&checked_mu);
  for (size_t i = 0; i < nchecked; ++i) {
    const checked_t *c = &checked[i];
    if (addr < c->map || addr >= c->map + c->map_len) continue;
    if (addr >= c->base + c->size)
      snprintf(out, n, ": %zu bytes past the end of the %zu-byte allocation at %#zx (offset %zu)",
               (size_t)(addr - c->base - c->size), (size_t)c->size, (size_t)c->base, (size_t)(addr - c->base));
    else if (addr < c->base)
      snprintf(out, n, ": %zu bytes before the %zu-byte allocation at %#zx", (size_t)(c->base - addr),
               (size_t)c->size, (size_t)c->base);
    break;
  }
  pthread_mutex_unlock(&checked_mu);
}
