"""What the tests of host program images share: a program that uses libc (its own kernel ``foo``,
exported data, a thread-local, a static helper), a runner of child interpreters, and the error
code of a raised OffloadError."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import offload as ol

from helpers import child_environ

LIBC_PROGRAM = r"""
#include <offload_host.h>
#include <stdlib.h>
#include <string.h>

OFFLOAD_EXPORT uint32_t counter[4];
OFFLOAD_EXPORT __thread int per_thread;
static void helper(void) {}
OFFLOAD_EXPORT void *keep_free = (void *)free;

struct foo_args { uint32_t *out; };
OFFLOAD_KERNEL_PARAMS(foo, struct foo_args, OFFLOAD_POINTER(out));
OFFLOAD_KERNEL(foo) {
  const struct foo_args *a = OFFLOAD_ARGS(struct foo_args);
  helper();
  OFFLOAD_FOR_EACH_ITEM(tid) { a->out[offload_global_id_x(tid)] = (uint32_t)strlen("abc") + tid.x; }
}
"""



def run_child(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``code`` (dedented) in a fresh interpreter with this run's OFFLOAD_* settings and ``env``."""
    full_env = child_environ("OFFLOAD_")
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=full_env, timeout=120)


def code_of(exc: pytest.ExceptionInfo[ol.OffloadError]) -> ol.ErrorCode:
    """The error code of the OffloadError that ``pytest.raises`` caught."""
    return exc.value.code
