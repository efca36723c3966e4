/* host_alias.c - see host_alias.h. Linux only (memfd_create, MAP_FIXED over live pages). */
#define _GNU_SOURCE
#include "host_alias.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static size_t page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }

/* Whether [lo, hi) lies in one private read-write mapping without a file (heap, anonymous, stack
 * excluded): only such pages can be replaced by a memfd mapping without changing what they are. */
static int plain_anonymous(uintptr_t lo, uintptr_t hi) {
  FILE *maps = fopen("/proc/self/maps", "r");
  if (maps == NULL) return 0;
  char line[512];
  int ok = 0;
  while (fgets(line, sizeof line, maps)) {
    unsigned long start, end, offset, inode;
    char perms[8], dev[16], path[256] = "";
    if (sscanf(line, "%lx-%lx %7s %lx %15s %lu %255s", &start, &end, perms, &offset, dev, &inode, path) < 6) continue;
    if (lo < start || lo >= end) continue;
    ok = hi <= end && strncmp(perms, "rw-p", 4) == 0 && inode == 0 &&
         (path[0] == '\0' || strcmp(path, "[heap]") == 0);
    break;
  }
  fclose(maps);
  return ok;
}

void *host_alias_map(void *ptr, size_t size) {
  size_t page = page_size();
  uintptr_t lo = (uintptr_t)ptr & ~(uintptr_t)(page - 1);
  uintptr_t hi = ((uintptr_t)ptr + size + page - 1) & ~(uintptr_t)(page - 1);
  size_t length = hi - lo;
  if (!plain_anonymous(lo, hi)) return NULL;
  int fd = memfd_create("gpusim-hip-registered", MFD_CLOEXEC);
  if (fd < 0) return NULL;
  void *result = NULL;
  if (ftruncate(fd, (off_t)length) == 0) {
    void *copy = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (copy != MAP_FAILED) {
      memcpy(copy, (void *)lo, length); /* the pages' contents, then the same pages become the memfd's */
      if (mmap((void *)lo, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) != MAP_FAILED)
        result = (unsigned char *)copy + ((uintptr_t)ptr - lo);
      else
        munmap(copy, length);
    }
  }
  close(fd);
  return result;
}

void host_alias_unmap(void *alias, void *ptr, size_t size) {
  size_t page = page_size();
  uintptr_t lo = (uintptr_t)ptr & ~(uintptr_t)(page - 1);
  uintptr_t hi = ((uintptr_t)ptr + size + page - 1) & ~(uintptr_t)(page - 1);
  munmap((unsigned char *)alias - ((uintptr_t)ptr - lo), hi - lo);
}
