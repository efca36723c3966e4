/* amdgpu_image.c - code objects, offload bundles and NT_AMDGPU_METADATA for the HIP front. */
#include "amdgpu_image.h"

#include "../core/simcore.h"

#include <string.h>

#define EM_AMDGPU 224
#define ELFOSABI_AMDGPU_HSA 64
#define NT_AMDGPU_METADATA 32
static const char BUNDLE_MAGIC[] = "__CLANG_OFFLOAD_BUNDLE__"; /* 24 bytes */

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p) { return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16; }
static uint64_t rd64(const unsigned char *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

#define IMAGE_SIZE_MAX ((size_t)1 << 31)

size_t amdgpu_image_size(const void *data, size_t limit) {
  const unsigned char *p = data;
  if (p == NULL || limit < 64) return 0;
  if (memcmp(p, "\177ELF", 4) == 0) {
    if (p[4] != 2 || p[5] != 1) return 0;
    uint64_t phoff = rd64(p + 32), shoff = rd64(p + 40);
    uint16_t phentsize = rd16(p + 54), phnum = rd16(p + 56), shentsize = rd16(p + 58), shnum = rd16(p + 60);
    uint64_t end = 64;
    if (shentsize != 64 || shoff > IMAGE_SIZE_MAX) return 0;
    if (shoff + (uint64_t)shnum * 64 > end) end = shoff + (uint64_t)shnum * 64;
    if (end > limit) return 0;
    for (unsigned i = 0; i < shnum; ++i) {
      const unsigned char *h = p + shoff + (uint64_t)i * 64;
      uint32_t type = rd32(h + 4);
      uint64_t off = rd64(h + 24), sz = rd64(h + 32);
      if (type == 8 /* NOBITS */) continue;
      if (off > IMAGE_SIZE_MAX || sz > IMAGE_SIZE_MAX) return 0;
      if (off + sz > end) end = off + sz;
    }
    if (phentsize == 56 && phoff < IMAGE_SIZE_MAX && phoff + (uint64_t)phnum * 56 > end)
      end = phoff + (uint64_t)phnum * 56;
    return end <= limit ? (size_t)end : 0;
  }
  if (memcmp(p, BUNDLE_MAGIC, 24) == 0) {
    uint64_t count = rd64(p + 24), pos = 32, end = 32;
    if (count > 4096) return 0;
    for (uint64_t i = 0; i < count; ++i) {
      if (pos + 24 > limit) return 0;
      uint64_t off = rd64(p + pos), sz = rd64(p + pos + 8), tsz = rd64(p + pos + 16);
      if (off > IMAGE_SIZE_MAX || sz > IMAGE_SIZE_MAX || tsz > 4096) return 0;
      pos += 24 + tsz;
      if (off + sz > end) end = off + sz;
    }
    if (pos > end) end = pos;
    return end <= limit ? (size_t)end : 0;
  }
  return 0;
}

/* ---- targets -------------------------------------------------------------------------------- */

static amdgpu_image_status elf_target(const unsigned char *p, size_t size, amdgpu_target *out) {
  sim_elf elf;
  if (sim_elf_open(p, size, &elf) != SIM_OK || elf.machine != EM_AMDGPU || p[7] != ELFOSABI_AMDGPU_HSA)
    return AMDGPU_IMAGE_MALFORMED;
  out->mach = elf.flags & 0xff;
  if (elf.abi_version >= 2) { /* code object v4+: two-bit settings 0 unsupported, 1 any, 2 off, 3 on */
    unsigned x = (elf.flags >> 8) & 3, s = (elf.flags >> 10) & 3;
    out->xnack = x == 3 ? 1 : x == 2 ? 0 : -1;
    out->sramecc = s == 3 ? 1 : s == 2 ? 0 : -1;
  } else if (elf.abi_version == 1) { /* v3: one bit each */
    out->xnack = (elf.flags & 0x100) ? 1 : -1;
    out->sramecc = (elf.flags & 0x200) ? 1 : -1;
  } else {
    return AMDGPU_IMAGE_MALFORMED; /* v2 and older carry no metadata note */
  }
  return AMDGPU_IMAGE_OK;
}

static int runs_on(const amdgpu_target *code, const amdgpu_target *device) {
  return code->mach == device->mach && (code->xnack < 0 || code->xnack == device->xnack) &&
         (code->sramecc < 0 || code->sramecc == device->sramecc);
}

/* "gfx90a", "gfx90a:xnack-" ... -> target; 0 when not a gfx target id. */
static const struct {
  const char *name;
  unsigned mach;
} MACHS[] = {{"gfx900", 0x2c}, {"gfx906", 0x2f}, {"gfx908", 0x30}, {"gfx90a", 0x3f}, {"gfx940", 0x40},
             {"gfx941", 0x4b}, {"gfx942", 0x4c}, {"gfx1030", 0x36}, {"gfx1100", 0x41}, {"gfx1101", 0x46},
             {"gfx1200", 0x48}, {"gfx1201", 0x4e}, {"gfx803", 0x2a}};

static int parse_target_id(const char *id, size_t len, amdgpu_target *out) {
  size_t name_len = 0;
  while (name_len < len && id[name_len] != ':') ++name_len;
  out->mach = 0;
  for (size_t i = 0; i < sizeof MACHS / sizeof MACHS[0]; ++i)
    if (strlen(MACHS[i].name) == name_len && memcmp(MACHS[i].name, id, name_len) == 0) out->mach = MACHS[i].mach;
  if (out->mach == 0) return 0;
  out->xnack = out->sramecc = -1;
  size_t pos = name_len;
  while (pos < len) {
    size_t start = ++pos;
    while (pos < len && id[pos] != ':') ++pos;
    size_t n = pos - start;
    if (n < 2) return 0;
    int on = id[start + n - 1] == '+' ? 1 : id[start + n - 1] == '-' ? 0 : -2;
    if (on == -2) return 0;
    if (n - 1 == 5 && memcmp(id + start, "xnack", 5) == 0) out->xnack = on;
    else if (n - 1 == 7 && memcmp(id + start, "sramecc", 7) == 0) out->sramecc = on;
    else return 0;
  }
  return 1;
}

amdgpu_image_status amdgpu_select_code_object(const void *data, size_t size, const amdgpu_target *device,
                                              const unsigned char **code, size_t *code_size) {
  const unsigned char *p = data;
  if (p == NULL || size < 32) return AMDGPU_IMAGE_MALFORMED;
  if (memcmp(p, BUNDLE_MAGIC, 24) == 0) {
    uint64_t count = rd64(p + 24), pos = 32;
    int any_amdgpu = 0;
    for (uint64_t i = 0; i < count; ++i) {
      if (pos + 24 > size) return AMDGPU_IMAGE_MALFORMED;
      uint64_t off = rd64(p + pos), sz = rd64(p + pos + 8), tsz = rd64(p + pos + 16);
      const char *triple = (const char *)p + pos + 24;
      if (tsz > size - pos - 24 || off > size || sz > size - off) return AMDGPU_IMAGE_MALFORMED;
      pos += 24 + tsz;
      /* hipv4-amdgcn-amd-amdhsa--gfx90a:xnack- : the target id follows the 4th '-' */
      static const char prefix1[] = "hipv4-amdgcn-amd-amdhsa--", prefix2[] = "hip-amdgcn-amd-amdhsa--";
      size_t skip = 0;
      if (tsz > sizeof prefix1 - 1 && memcmp(triple, prefix1, sizeof prefix1 - 1) == 0) skip = sizeof prefix1 - 1;
      else if (tsz > sizeof prefix2 - 1 && memcmp(triple, prefix2, sizeof prefix2 - 1) == 0) skip = sizeof prefix2 - 1;
      if (!skip) continue;
      amdgpu_target wanted, actual;
      if (!parse_target_id(triple + skip, tsz - skip, &wanted)) continue;
      any_amdgpu = 1;
      if (!runs_on(&wanted, device)) continue;
      if (elf_target(p + off, sz, &actual) != AMDGPU_IMAGE_OK) return AMDGPU_IMAGE_MALFORMED;
      if (!runs_on(&actual, device)) return AMDGPU_IMAGE_WRONG_TARGET;
      *code = p + off;
      *code_size = sz;
      return AMDGPU_IMAGE_OK;
    }
    return any_amdgpu ? AMDGPU_IMAGE_WRONG_TARGET : AMDGPU_IMAGE_MALFORMED;
  }
  amdgpu_target actual;
  amdgpu_image_status status = elf_target(p, size, &actual);
  if (status != AMDGPU_IMAGE_OK) return status;
  if (!runs_on(&actual, device)) return AMDGPU_IMAGE_WRONG_TARGET;
  *code = p;
  *code_size = size;
  return AMDGPU_IMAGE_OK;
}

/* ---- msgpack (the subset of the metadata note) ------------------------------------------------ */

typedef struct mp {
  const unsigned char *p, *end;
  int bad;
} mp;

static uint64_t mp_be(mp *m, unsigned n) {
  if ((size_t)(m->end - m->p) < n) {
    m->bad = 1;
    return 0;
  }
  uint64_t v = 0;
  for (unsigned i = 0; i < n; ++i) v = v << 8 | m->p[i];
  m->p += n;
  return v;
}

enum { MP_NIL, MP_INT, MP_STR, MP_ARRAY, MP_MAP, MP_OTHER };

/* Reads one head: type, and the value (int), the length (str: bytes at *str), or the count. */
static int mp_head(mp *m, uint64_t *value, const unsigned char **str) {
  unsigned b = (unsigned)mp_be(m, 1);
  if (m->bad) return MP_OTHER;
  if (b <= 0x7f) return *value = b, MP_INT;
  if (b >= 0xe0) return *value = (uint64_t)(int64_t)(int8_t)b, MP_INT;
  if ((b & 0xf0) == 0x80) return *value = b & 0x0f, MP_MAP;
  if ((b & 0xf0) == 0x90) return *value = b & 0x0f, MP_ARRAY;
  if ((b & 0xe0) == 0xa0) *value = b & 0x1f;
  else if (b >= 0xd9 && b <= 0xdb) *value = mp_be(m, 1u << (b - 0xd9));
  else if (b >= 0xcc && b <= 0xcf) return *value = mp_be(m, 1u << (b - 0xcc)), MP_INT;
  else if (b >= 0xd0 && b <= 0xd3) {
    unsigned n = 1u << (b - 0xd0);
    uint64_t v = mp_be(m, n);
    if (n < 8 && (v >> (8 * n - 1))) v |= ~(uint64_t)0 << (8 * n);
    return *value = v, MP_INT;
  } else if (b == 0xdc || b == 0xdd) return *value = mp_be(m, b == 0xdc ? 2 : 4), MP_ARRAY;
  else if (b == 0xde || b == 0xdf) return *value = mp_be(m, b == 0xde ? 2 : 4), MP_MAP;
  else if (b == 0xc0) return MP_NIL;
  else if (b == 0xc2 || b == 0xc3) return *value = b == 0xc3, MP_OTHER;
  else if (b == 0xca) return mp_be(m, 4), MP_OTHER;
  else if (b == 0xcb) return mp_be(m, 8), MP_OTHER;
  else if (b >= 0xc4 && b <= 0xc6) {
    uint64_t n = mp_be(m, 1u << (b - 0xc4));
    if ((uint64_t)(m->end - m->p) < n) m->bad = 1;
    else m->p += n;
    return MP_OTHER;
  } else {
    m->bad = 1;
    return MP_OTHER;
  }
  /* a string */
  if ((uint64_t)(m->end - m->p) < *value) {
    m->bad = 1;
    return MP_OTHER;
  }
  *str = m->p;
  m->p += *value;
  return MP_STR;
}

static void mp_skip(mp *m, int depth) {
  uint64_t v = 0;
  const unsigned char *s;
  int t = mp_head(m, &v, &s);
  if (depth > 32) m->bad = 1;
  if (m->bad) return;
  if (t == MP_ARRAY)
    for (uint64_t i = 0; i < v && !m->bad; ++i) mp_skip(m, depth + 1);
  else if (t == MP_MAP)
    for (uint64_t i = 0; i < 2 * v && !m->bad; ++i) mp_skip(m, depth + 1);
}

static int key_is(const unsigned char *s, uint64_t n, const char *key) { return strlen(key) == n && memcmp(s, key, n) == 0; }

/* Whether the next value is of `type` (read into value / str as mp_head does); if not, the
 * document is bad. */
static int mp_expect(mp *m, int type, uint64_t *value, const unsigned char **str) {
  if (mp_head(m, value, str) == type) return 1;
  m->bad = 1;
  return 0;
}

static uint64_t mp_uint(mp *m) {
  uint64_t v = 0;
  const unsigned char *s;
  mp_expect(m, MP_INT, &v, &s);
  return v;
}

static void read_arg(mp *m, amdgpu_kernel *k) {
  uint64_t n = 0, offset = 0, size = 0;
  const unsigned char *s;
  int hidden = 0, has_kind = 0;
  if (!mp_expect(m, MP_MAP, &n, &s)) return;
  for (uint64_t i = 0; i < n && !m->bad; ++i) {
    uint64_t len = 0;
    const unsigned char *key;
    if (!mp_expect(m, MP_STR, &len, &key)) return;
    if (key_is(key, len, ".offset")) offset = mp_uint(m);
    else if (key_is(key, len, ".size")) size = mp_uint(m);
    else if (key_is(key, len, ".value_kind")) {
      uint64_t vlen = 0;
      const unsigned char *kind;
      mp_expect(m, MP_STR, &vlen, &kind);
      hidden = vlen >= 7 && memcmp(kind, "hidden_", 7) == 0;
      has_kind = 1;
    } else mp_skip(m, 1);
  }
  if (!has_kind) m->bad = 1;
  if (m->bad || hidden) return;
  if (k->arg_count == AMDGPU_MAX_ARGS) {
    m->bad = 1;
    return;
  }
  k->arg_offset[k->arg_count] = offset;
  k->arg_size[k->arg_count] = size;
  ++k->arg_count;
  if (offset + size > k->explicit_size) k->explicit_size = offset + size;
}

static void read_kernel(mp *m, amdgpu_kernel *k) {
  uint64_t n = 0;
  const unsigned char *s;
  memset(k, 0, sizeof *k);
  k->max_flat_workgroup_size = 1024;
  if (!mp_expect(m, MP_MAP, &n, &s)) return;
  int named = 0;
  for (uint64_t i = 0; i < n && !m->bad; ++i) {
    uint64_t len = 0;
    const unsigned char *key;
    if (!mp_expect(m, MP_STR, &len, &key)) return;
    if (key_is(key, len, ".name")) {
      uint64_t nlen = 0;
      const unsigned char *name;
      if (mp_head(m, &nlen, &name) != MP_STR || nlen >= AMDGPU_NAME_MAX) {
        m->bad = 1;
        return;
      }
      memcpy(k->name, name, nlen);
      k->name[nlen] = '\0';
      named = 1;
    } else if (key_is(key, len, ".args")) {
      uint64_t count = 0;
      mp_expect(m, MP_ARRAY, &count, &s);
      for (uint64_t a = 0; a < count && !m->bad; ++a) read_arg(m, k);
    } else if (key_is(key, len, ".kernarg_segment_size")) k->kernarg_size = mp_uint(m);
    else if (key_is(key, len, ".group_segment_fixed_size")) k->group_segment_size = mp_uint(m);
    else if (key_is(key, len, ".max_flat_workgroup_size")) k->max_flat_workgroup_size = (unsigned)mp_uint(m);
    else mp_skip(m, 1);
  }
  if (!named) m->bad = 1;
}

static amdgpu_image_status read_note(const unsigned char *desc, size_t size, amdgpu_kernel *out, unsigned max,
                                     unsigned *count) {
  mp m = {desc, desc + size, 0};
  uint64_t n = 0;
  const unsigned char *s;
  *count = 0;
  if (mp_head(&m, &n, &s) != MP_MAP) return AMDGPU_IMAGE_MALFORMED;
  for (uint64_t i = 0; i < n && !m.bad; ++i) {
    uint64_t len = 0;
    const unsigned char *key;
    if (mp_head(&m, &len, &key) != MP_STR) return AMDGPU_IMAGE_MALFORMED;
    if (!key_is(key, len, "amdhsa.kernels")) {
      mp_skip(&m, 1);
      continue;
    }
    uint64_t kernels = 0;
    if (mp_head(&m, &kernels, &s) != MP_ARRAY) return AMDGPU_IMAGE_MALFORMED;
    for (uint64_t k = 0; k < kernels && !m.bad; ++k) {
      if (*count == max) return AMDGPU_IMAGE_MALFORMED;
      read_kernel(&m, &out[*count]);
      ++*count;
    }
  }
  return m.bad ? AMDGPU_IMAGE_MALFORMED : AMDGPU_IMAGE_OK;
}

amdgpu_image_status amdgpu_read_kernels(const unsigned char *code, size_t size, amdgpu_kernel *out, unsigned max,
                                        unsigned *count) {
  sim_elf elf;
  if (sim_elf_open(code, size, &elf) != SIM_OK) return AMDGPU_IMAGE_MALFORMED;
  for (unsigned i = 0; i < elf.shnum; ++i) {
    sim_elf_section sec;
    if (sim_elf_section_at(&elf, i, &sec) != SIM_OK) return AMDGPU_IMAGE_MALFORMED;
    if (sec.type != 7 /* NOTE */ || sec.data == NULL) continue;
    uint64_t pos = 0;
    while (pos + 12 <= sec.size) {
      uint32_t namesz = rd32(sec.data + pos), descsz = rd32(sec.data + pos + 4), type = rd32(sec.data + pos + 8);
      uint64_t name_at = pos + 12, desc_at = name_at + ((namesz + 3u) & ~3u);
      if (desc_at > sec.size || descsz > sec.size - desc_at) return AMDGPU_IMAGE_MALFORMED;
      if (type == NT_AMDGPU_METADATA && namesz == 7 && memcmp(sec.data + name_at, "AMDGPU", 7) == 0)
        return read_note(sec.data + desc_at, descsz, out, max, count);
      pos = desc_at + ((descsz + 3u) & ~3u);
    }
  }
  return AMDGPU_IMAGE_MALFORMED;
}
