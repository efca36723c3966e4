/* cuimage.c - cubin / fatbin / PTX parsing for the simulated CUDA driver (see cuimage.h). */
#define _GNU_SOURCE
#include "cuimage.h"

#include "../core/simcore.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  OK = 0,
  INVALID_IMAGE = 200,
  NO_BINARY_FOR_GPU = 209,
  INVALID_PTX = 218,
  UNSUPPORTED_PTX_VERSION = 222,
  OUT_OF_MEMORY = 2,
};

#define EM_CUDA 190
#define FATBIN_MAGIC 0xBA55ED50u

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p) { return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16; }
static uint64_t rd64(const unsigned char *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

void cu_image_release(cu_image *img) {
  for (unsigned i = 0; i < img->kernel_count; ++i) {
    free(img->kernels[i].name);
    free(img->kernels[i].params);
  }
  for (unsigned i = 0; i < img->global_count; ++i) {
    free(img->globals[i].name);
    free(img->globals[i].init);
  }
  free(img->kernels);
  free(img->globals);
  memset(img, 0, sizeof *img);
}

static int add_kernel(cu_image *img, const char *name, size_t name_len) {
  cu_kernel_info *grown = realloc(img->kernels, (img->kernel_count + 1) * sizeof *grown);
  if (grown == NULL) return -1;
  img->kernels = grown;
  cu_kernel_info *k = &img->kernels[img->kernel_count];
  memset(k, 0, sizeof *k);
  k->name = strndup(name, name_len);
  if (k->name == NULL) return -1;
  return (int)img->kernel_count++;
}

static int add_param(cu_kernel_info *k, unsigned ordinal, uint32_t offset, uint32_t size) {
  if (ordinal >= CU_MAX_PARAMS) return -1;
  if (ordinal >= k->param_count) {
    cu_param *grown = realloc(k->params, (ordinal + 1) * sizeof *grown);
    if (grown == NULL) return -1;
    memset(grown + k->param_count, 0, (ordinal + 1 - k->param_count) * sizeof *grown);
    k->params = grown;
    k->param_count = ordinal + 1;
  }
  k->params[ordinal] = (cu_param){offset, size};
  if (offset + size > k->param_bytes) k->param_bytes = offset + size;
  return 0;
}

static int add_global(cu_image *img, const char *name, size_t name_len, size_t size, const void *init) {
  cu_global_info *grown = realloc(img->globals, (img->global_count + 1) * sizeof *grown);
  if (grown == NULL) return -1;
  img->globals = grown;
  cu_global_info *g = &img->globals[img->global_count];
  g->name = strndup(name, name_len);
  g->size = size;
  g->init = NULL;
  if (g->name == NULL) return -1;
  if (init != NULL && size) {
    g->init = malloc(size);
    if (g->init == NULL) {
      free(g->name);
      return -1;
    }
    memcpy(g->init, init, size);
  }
  ++img->global_count;
  return 0;
}

/* ---- cubin ----------------------------------------------------------------------------------- */

/* The extent of an ELF image from its headers (the driver gets no size either). */
static size_t elf_extent(const unsigned char *p) {
  uint64_t phoff = rd64(p + 32), shoff = rd64(p + 40);
  uint16_t phentsize = rd16(p + 54), phnum = rd16(p + 56), shentsize = rd16(p + 58), shnum = rd16(p + 60);
  uint64_t end = 64;
  if (phnum && phoff + (uint64_t)phnum * phentsize > end) end = phoff + (uint64_t)phnum * phentsize;
  if (shnum && shoff + (uint64_t)shnum * shentsize > end) end = shoff + (uint64_t)shnum * shentsize;
  if (shentsize != 64 || shnum > 4096 || shoff > (1ull << 32)) return 0;
  for (unsigned i = 0; i < shnum; ++i) {
    const unsigned char *h = p + shoff + (uint64_t)i * 64;
    if (rd32(h + 4) == 8 /* NOBITS */) continue;
    uint64_t e = rd64(h + 24) + rd64(h + 32);
    if (e > end) end = e;
  }
  for (unsigned i = 0; i < phnum && phentsize == 56; ++i) {
    const unsigned char *h = p + phoff + (uint64_t)i * 56;
    uint64_t e = rd64(h + 8) + rd64(h + 32);
    if (e > end) end = e;
  }
  return end > (1ull << 32) ? 0 : (size_t)end;
}

static unsigned cubin_sm(const sim_elf *elf) {
  return elf->abi_version >= 8 ? (elf->flags >> 8) & 0xff : elf->flags & 0xff;
}

/* Upstream's rule and the driver's: same major, image minor not above the device's. */
static int sm_compatible(unsigned image_sm, int device_sm) {
  return image_sm / 10 == (unsigned)device_sm / 10 && image_sm % 10 <= (unsigned)device_sm % 10;
}

typedef struct symbol_scan {
  cu_image *img;
  const sim_elf *elf;
  int failed;
  unsigned index;
  /* symbol index -> kernel index, for REGCOUNT records */
  int *kernel_of_symbol;
  unsigned symbol_cap;
} symbol_scan;

static int find_section(const sim_elf *elf, const char *name, sim_elf_section *out) {
  for (unsigned i = 0; i < elf->shnum; ++i)
    if (sim_elf_section_at(elf, i, out) == SIM_OK && strcmp(out->name, name) == 0) return (int)i;
  return -1;
}

static int scan_symbol(const sim_elf_symbol *sym, void *raw) {
  symbol_scan *scan = raw;
  unsigned index = scan->index++;
  unsigned type = sym->info & 0xf;
  if (type == 2 /* STT_FUNC */ && (sym->other & 0x10) /* STO_CUDA_ENTRY */) {
    int k = add_kernel(scan->img, sym->name, strlen(sym->name));
    if (k < 0) return scan->failed = 1;
    if (index < scan->symbol_cap) scan->kernel_of_symbol[index] = k;
  } else if (type == 1 /* STT_OBJECT */ && sym->shndx != 0 && sym->shndx < 0xff00) {
    sim_elf_section sec;
    if (sim_elf_section_at(scan->elf, sym->shndx, &sec) != SIM_OK) return scan->failed = 1;
    int zero = strcmp(sec.name, ".nv.global") == 0;
    int init = strcmp(sec.name, ".nv.global.init") == 0;
    if (!zero && !init) return 0;
    if (init && (sym->value > sec.size || sym->size > sec.size - sym->value)) return scan->failed = 1;
    if (add_global(scan->img, sym->name, strlen(sym->name), sym->size, init ? sec.data + sym->value : NULL) < 0)
      return scan->failed = 1;
  }
  return 0;
}

/* Walks the attribute records of an .nv.info* section. */
static int parse_nv_info(const sim_elf_section *sec, cu_kernel_info *kernel, symbol_scan *scan) {
  const unsigned char *p = sec->data, *end = sec->data + sec->size;
  while (p + 4 <= end) {
    unsigned format = p[0], attr = p[1];
    const unsigned char *data = p + 2;
    size_t size = 2;
    if (format == 0x04) {
      size = rd16(p + 2);
      data = p + 4;
      if ((size_t)(end - data) < size) return -1;
      p = data + size;
    } else {
      p += 4;
    }
    if (kernel != NULL && attr == 0x17 && format == 0x04 && size >= 12) { /* EIATTR_KPARAM_INFO */
      unsigned ordinal = rd16(data + 4), offset = rd16(data + 6);
      uint32_t psize = (rd32(data + 8) >> 18) & 0x3fff;
      if (add_param(kernel, ordinal, offset, psize) < 0) return -1;
    } else if (kernel == NULL && attr == 0x2f && format == 0x04 && size >= 8) { /* EIATTR_REGCOUNT */
      uint32_t symbol = rd32(data), count = rd32(data + 4);
      if (symbol < scan->symbol_cap && scan->kernel_of_symbol[symbol] >= 0)
        scan->img->kernels[scan->kernel_of_symbol[symbol]].registers = count;
    }
  }
  return 0;
}

static int parse_cubin(const unsigned char *p, size_t size, int device_sm, cu_image *img) {
  sim_elf elf;
  if (sim_elf_open(p, size, &elf) != SIM_OK || elf.machine != EM_CUDA) return INVALID_IMAGE;
  img->sm = cubin_sm(&elf);
  if (!sm_compatible(img->sm, device_sm)) return NO_BINARY_FOR_GPU;
  symbol_scan scan = {img, &elf, 0, 0, NULL, 0};
  /* count symbols for the index map */
  for (unsigned i = 0; i < elf.shnum; ++i) {
    sim_elf_section sec;
    if (sim_elf_section_at(&elf, i, &sec) != SIM_OK) return INVALID_IMAGE;
    if (sec.type == 2) scan.symbol_cap += (unsigned)(sec.size / 24);
  }
  scan.kernel_of_symbol = malloc((scan.symbol_cap + 1) * sizeof(int));
  if (scan.kernel_of_symbol == NULL) return OUT_OF_MEMORY;
  for (unsigned i = 0; i < scan.symbol_cap; ++i) scan.kernel_of_symbol[i] = -1;
  int rc = sim_elf_symbols(&elf, scan_symbol, &scan);
  if (rc < 0 || scan.failed) {
    free(scan.kernel_of_symbol);
    return rc < 0 ? INVALID_IMAGE : OUT_OF_MEMORY;
  }
  char name[1100];
  for (unsigned k = 0; k < img->kernel_count; ++k) {
    sim_elf_section sec;
    snprintf(name, sizeof name, ".nv.info.%s", img->kernels[k].name);
    if (find_section(&elf, name, &sec) >= 0 && parse_nv_info(&sec, &img->kernels[k], &scan) < 0) {
      free(scan.kernel_of_symbol);
      return INVALID_IMAGE;
    }
    snprintf(name, sizeof name, ".nv.shared.%s", img->kernels[k].name);
    if (find_section(&elf, name, &sec) >= 0) img->kernels[k].static_shared = (uint32_t)sec.size;
  }
  sim_elf_section info;
  if (find_section(&elf, ".nv.info", &info) >= 0 && parse_nv_info(&info, NULL, &scan) < 0) {
    free(scan.kernel_of_symbol);
    return INVALID_IMAGE;
  }
  free(scan.kernel_of_symbol);
  return OK;
}

/* ---- PTX --------------------------------------------------------------------------------------- */

static const char *skip_space(const char *p, const char *end) {
  while (p < end) {
    if (isspace((unsigned char)*p)) ++p;
    else if (p + 1 < end && p[0] == '/' && p[1] == '/') {
      while (p < end && *p != '\n') ++p;
    } else if (p + 1 < end && p[0] == '/' && p[1] == '*') {
      const char *close = strstr(p + 2, "*/");
      p = close && close < end ? close + 2 : end;
    } else break;
  }
  return p;
}

static size_t token_len(const char *p, const char *end) {
  size_t n = 0;
  while (p + n < end && (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '$' || p[n] == '.')) ++n;
  return n;
}

static uint32_t ptx_type_size(const char *t, size_t n) {
  if (n < 3 || t[0] != '.') return 0;
  if (n == 3 && (t[1] == 'u' || t[1] == 's' || t[1] == 'b') && t[2] == '8') return 1;
  if (n == 4 && (t[1] == 'u' || t[1] == 's' || t[1] == 'b' || t[1] == 'f') && t[2] == '1' && t[3] == '6') return 2;
  if (n == 4 && (t[1] == 'u' || t[1] == 's' || t[1] == 'b' || t[1] == 'f') && t[2] == '3' && t[3] == '2') return 4;
  if (n == 4 && (t[1] == 'u' || t[1] == 's' || t[1] == 'b' || t[1] == 'f') && t[2] == '6' && t[3] == '4') return 8;
  if (n == 5 && memcmp(t, ".pred", 5) == 0) return 1;
  return 0;
}

/* Parses one declaration "[.align N] .type name[count]" from p; returns the end or NULL. A kernel
 * parameter's ".ptr [.space] .align N" attribute (PTX ISA, "Kernel Function Parameter Attributes:
 * .ptr", as NVRTC writes it) gives the alignment of the memory pointed to, not of the parameter:
 * an .align after .ptr is skipped. */
static const char *ptx_declaration(const char *p, const char *end, uint32_t *align, uint32_t *size, const char **name,
                                   size_t *name_len) {
  *align = 0;
  uint32_t elem = 0;
  int pointer_attribute = 0;
  for (;;) {
    p = skip_space(p, end);
    size_t n = token_len(p, end);
    if (n == 0) return NULL;
    if (n == 4 && memcmp(p, ".ptr", 4) == 0) {
      pointer_attribute = 1;
      p += n;
      continue;
    }
    if (n == 6 && memcmp(p, ".align", 6) == 0) {
      p = skip_space(p + n, end);
      uint32_t value = (uint32_t)strtoul(p, (char **)&p, 10);
      if (!pointer_attribute) *align = value;
      continue;
    }
    if (p[0] == '.') {
      uint32_t s = ptx_type_size(p, n);
      if (s) elem = s;
      p += n;
      continue;
    }
    *name = p;
    *name_len = n;
    p += n;
    break;
  }
  if (elem == 0) return NULL;
  uint32_t count = 1;
  p = skip_space(p, end);
  if (p < end && *p == '[') {
    count = (uint32_t)strtoul(p + 1, (char **)&p, 10);
    if (p >= end || *p != ']') return NULL;
    ++p;
  }
  *size = elem * count;
  if (*align == 0) *align = elem;
  return p;
}

static __thread char jit_log[512];

const char *cu_image_jit_log(void) { return jit_log; }

static unsigned line_of(const char *text, const char *at) {
  unsigned line = 1;
  for (const char *p = text; p < at; ++p) line += *p == '\n';
  return line;
}

static int parse_ptx(const char *text, size_t len, int device_sm, int max_ptx, cu_image *img) {
  const char *end = text + len;
  const char *v = strstr(text, ".version");
  const char *t = strstr(text, ".target");
  if (v == NULL || t == NULL) {
    snprintf(jit_log, sizeof jit_log, "ptxas fatal   : no %s directive in the PTX input", v == NULL ? ".version" : ".target");
    return INVALID_IMAGE;
  }
  unsigned major = 0, minor = 0, sm = 0;
  char suffix = 0;
  if (sscanf(v, ".version %u.%u", &major, &minor) != 2) {
    snprintf(jit_log, sizeof jit_log, "ptxas application ptx input, line %u; fatal   : malformed .version directive", line_of(text, v));
    return INVALID_PTX;
  }
  int fields = sscanf(t, ".target sm_%u%c", &sm, &suffix);
  if (fields < 1) {
    snprintf(jit_log, sizeof jit_log, "ptxas application ptx input, line %u; fatal   : malformed .target directive", line_of(text, t));
    return INVALID_PTX;
  }
  if (fields < 2 || (suffix != 'a' && suffix != 'f')) suffix = 0;
  img->ptx_version = major * 10 + minor;
  img->sm = sm;
  /* The driver's JIT reads PTX ISA versions up to its own (PTX ISA "Release Notes": 9.0 with
   * CUDA 13.0); newer PTX is refused before anything else. */
  if ((int)img->ptx_version > max_ptx) {
    snprintf(jit_log, sizeof jit_log,
             "ptxas application ptx input, line %u; fatal   : Unsupported .version %u.%u; current version is '%d.%d'",
             line_of(text, v), major, minor, max_ptx / 10, max_ptx % 10);
    return UNSUPPORTED_PTX_VERSION;
  }
  /* PTX ISA "Target ISA notes": sm_XXa (architecture-specific) code runs only on exactly sm_XX;
   * sm_XXf (family-specific) on the same major with a minor not below; plain sm_XX on any
   * device of that compute capability or newer. */
  int ok = suffix == 'a' ? (int)sm == device_sm
           : suffix == 'f' ? (int)sm / 10 == device_sm / 10 && (int)sm <= device_sm
                           : (int)sm <= device_sm;
  if (!ok) {
    snprintf(jit_log, sizeof jit_log,
             "ptxas application ptx input, line %u; error   : '.target sm_%u%s' cannot be compiled for this device (sm_%d)",
             line_of(text, t), sm, suffix == 'a' ? "a" : suffix == 'f' ? "f" : "", device_sm);
    return INVALID_PTX;
  }
  img->sm = (unsigned)device_sm; /* JIT-compiled for the device */
  for (const char *p = text; p < end;) {
    p = skip_space(p, end);
    size_t n = token_len(p, end);
    if (n == 0) {
      ++p;
      continue;
    }
    if (n == 6 && memcmp(p, ".entry", 6) == 0) {
      p = skip_space(p + n, end);
      size_t name_len = token_len(p, end);
      if (name_len == 0) return INVALID_PTX;
      int k = add_kernel(img, p, name_len);
      if (k < 0) return OUT_OF_MEMORY;
      p = skip_space(p + name_len, end);
      if (p < end && *p == '(') {
        ++p;
        uint32_t offset = 0;
        unsigned ordinal = 0;
        for (;;) {
          p = skip_space(p, end);
          if (p >= end) return INVALID_PTX;
          if (*p == ')') {
            ++p;
            break;
          }
          if (*p == ',') {
            ++p;
            continue;
          }
          size_t m = token_len(p, end);
          if (m != 6 || memcmp(p, ".param", 6) != 0) return INVALID_PTX;
          uint32_t align, size;
          const char *pname;
          size_t pname_len;
          p = ptx_declaration(p + m, end, &align, &size, &pname, &pname_len);
          if (p == NULL || align == 0 || (align & (align - 1))) return INVALID_PTX;
          offset = (offset + align - 1) & ~(align - 1);
          if (add_param(&img->kernels[k], ordinal++, offset, size) < 0) return INVALID_PTX;
          offset += size;
        }
      }
      /* the body: sum its .shared declarations */
      p = skip_space(p, end);
      while (p < end && *p != '{' && *p != ';') ++p;
      if (p < end && *p == '{') {
        int depth = 0;
        const char *body = p;
        for (; p < end; ++p) {
          if (*p == '{') ++depth;
          else if (*p == '}' && --depth == 0) break;
        }
        for (const char *s = body; s && s < p; ++s) {
          s = strstr(s, ".shared");
          if (s == NULL || s >= p) break;
          uint32_t align, size;
          const char *sname;
          size_t sname_len;
          const char *after = ptx_declaration(s + 7, p, &align, &size, &sname, &sname_len);
          if (after) img->kernels[k].static_shared += size;
        }
      }
      continue;
    }
    if (n == 7 && memcmp(p, ".global", 7) == 0) {
      /* skip ".extern .global" declarations: look back for .extern on the same line */
      const char *line = p;
      while (line > text && line[-1] != '\n') --line;
      int external = memmem(line, (size_t)(p - line), ".extern", 7) != NULL;
      uint32_t align, size;
      const char *gname;
      size_t gname_len;
      const char *after = ptx_declaration(p + n, end, &align, &size, &gname, &gname_len);
      if (after == NULL) return INVALID_PTX;
      if (!external && add_global(img, gname, gname_len, size, NULL) < 0) return OUT_OF_MEMORY;
      p = after;
      continue;
    }
    p += n;
  }
  return OK;
}

/* ---- fatbin ------------------------------------------------------------------------------------- */

static int parse_fatbin(const unsigned char *p, int device_sm, int max_ptx, cu_image *img) {
  uint16_t header = rd16(p + 6);
  uint64_t total = rd64(p + 8);
  const unsigned char *end = p + header + total;
  const unsigned char *best_elf = NULL, *best_ptx = NULL;
  uint64_t best_elf_size = 0, best_ptx_size = 0;
  unsigned best_elf_sm = 0, best_ptx_sm = 0;
  int ptx_too_new = 0, compressed = 0;
  for (const unsigned char *e = p + header; e + 32 <= end;) {
    uint16_t kind = rd16(e);
    uint32_t eh = rd32(e + 4);
    uint64_t size = rd64(e + 8);
    if (eh < 32 || (uint64_t)(end - e) < eh || (uint64_t)(end - e) - eh < size) return INVALID_IMAGE;
    const unsigned char *payload = e + eh;
    unsigned arch = eh >= 32 ? rd32(e + 28) : 0;
    if (kind == 2) {
      if (size < 64 || memcmp(payload, "\177ELF", 4) != 0) compressed = 1;
      else {
        sim_elf elf;
        if (sim_elf_open(payload, size, &elf) == SIM_OK && sm_compatible(cubin_sm(&elf), device_sm) &&
            cubin_sm(&elf) >= best_elf_sm) {
          best_elf = payload;
          best_elf_size = size;
          best_elf_sm = cubin_sm(&elf);
        }
      }
    } else if (kind == 1) {
      const unsigned char *nul = memchr(payload, 0, size);
      size_t text_len = nul ? (size_t)(nul - payload) : size;
      if (memmem(payload, text_len, ".version", 8) == NULL) compressed = 1;
      else if ((int)arch <= device_sm && arch >= best_ptx_sm) {
        unsigned major = 0, minor = 0;
        const char *v = memmem(payload, text_len, ".version", 8);
        if (sscanf(v, ".version %u.%u", &major, &minor) == 2 && (int)(major * 10 + minor) > max_ptx) ptx_too_new = 1;
        else {
          best_ptx = payload;
          best_ptx_size = text_len;
          best_ptx_sm = arch;
        }
      }
    }
    e = payload + size;
  }
  if (best_elf) return parse_cubin(best_elf, best_elf_size, device_sm, img);
  if (best_ptx) {
    char *text = strndup((const char *)best_ptx, best_ptx_size);
    if (text == NULL) return OUT_OF_MEMORY;
    int rc = parse_ptx(text, best_ptx_size, device_sm, max_ptx, img);
    free(text);
    return rc;
  }
  if (compressed) fprintf(stderr, "gpusim: compressed fatbin entries are not modelled (build with --no-compress)\n");
  return ptx_too_new ? UNSUPPORTED_PTX_VERSION : NO_BINARY_FOR_GPU;
}

/* ---- entry ---------------------------------------------------------------------------------------- */

int cu_image_parse(const void *image, int device_sm, int max_ptx, cu_image *out, size_t *image_size) {
  const unsigned char *p = image;
  memset(out, 0, sizeof *out);
  jit_log[0] = '\0';
  int rc;
  if (memcmp(p, "\177ELF", 4) == 0) {
    if (p[4] != 2 || p[5] != 1) return INVALID_IMAGE;
    size_t size = elf_extent(p);
    if (size == 0) return INVALID_IMAGE;
    *image_size = size;
    rc = parse_cubin(p, size, device_sm, out);
  } else if (rd32(p) == FATBIN_MAGIC) {
    *image_size = (size_t)rd16(p + 6) + (size_t)rd64(p + 8);
    rc = parse_fatbin(p, device_sm, max_ptx, out);
  } else {
    /* PTX: NUL-terminated text */
    size_t len = strlen((const char *)p);
    for (size_t i = 0; i < len; ++i)
      if (!isprint(p[i]) && !isspace(p[i])) return INVALID_IMAGE;
    *image_size = len;
    rc = parse_ptx((const char *)p, len, device_sm, max_ptx, out);
  }
  if (rc != OK) cu_image_release(out);
  return rc;
}
