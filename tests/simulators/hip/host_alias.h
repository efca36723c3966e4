/* host_alias.h - a second mapping of registered host pages (the HIP front's hipHostRegister). */
#ifndef GPUSIM_HOST_ALIAS_H
#define GPUSIM_HOST_ALIAS_H

#include <stddef.h>

/* Gives the pages holding [ptr, ptr + size) a second address: their contents move to a memfd that
 * is mapped MAP_SHARED|MAP_FIXED over the same pages (so the host address keeps working and keeps
 * its contents) and mapped again elsewhere. Returns the address of ptr in the second mapping, or
 * NULL (the range is not plain private read-write anonymous memory, or a system call failed: the
 * pages are then left as they were). */
void *host_alias_map(void *ptr, size_t size);
/* Removes the second mapping made for [ptr, ptr + size) (alias: what host_alias_map returned).
 * The host pages stay (shared with nothing but themselves), contents intact. */
void host_alias_unmap(void *alias, void *ptr, size_t size);

#endif
