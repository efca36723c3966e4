"""The kit's suite and pytest plugin moved to offload-testing (``offload_testing``): the old names
``offload.testing.suite`` / ``offload.testing.plugin`` still import, warning, while it is
installed, and say how to get it when it is not. offload-core declares no pytest plugin.
Each case runs in a child interpreter (module caches and warnings registries start empty)."""

from __future__ import annotations

import importlib.metadata
from typing import Any

OLD_NAMES = """
import warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import offload.testing.plugin as old_plugin
    from offload.testing.suite import *  # noqa: F401,F403
    import offload.testing.suite as old_suite
import offload_testing.plugin, offload_testing.suite
same_classes = all(getattr(old_suite, n) is getattr(offload_testing.suite, n) for n in offload_testing.suite.__all__)
print("SAME", old_plugin is offload_testing.plugin, same_classes, "TestMemFill" in dir())
for w in caught:
    print("WARN", w.category.__name__, w.message)
"""

WITHOUT_KIT = """
import sys

class NoKit:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "offload_testing":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoKit())
import offload.testing
print("DECLARATIONS", offload.testing.Capabilities.__name__)
for old in ("offload.testing.suite", "offload.testing.plugin"):
    try:
        __import__(old)
    except ImportError as exc:
        print("REFUSED", old, exc)
"""


def _lines(stdout: str, head: str) -> list[str]:
    return [line.split(" ", 1)[1] for line in stdout.splitlines() if line.startswith(head + " ")]


def test_the_old_names_are_the_new_modules_with_a_warning(run_python: Any) -> None:
    proc = run_python(OLD_NAMES)
    assert _lines(proc.stdout, "SAME") == ["True True True"], proc.stdout
    warned = _lines(proc.stdout, "WARN")
    assert "DeprecationWarning offload.testing.plugin moved to offload_testing.plugin (distribution offload-testing)" in warned
    assert "DeprecationWarning offload.testing.suite moved to offload_testing.suite (distribution offload-testing)" in warned


def test_without_offload_testing_the_old_names_say_what_to_install(run_python: Any) -> None:
    proc = run_python(WITHOUT_KIT)
    assert _lines(proc.stdout, "DECLARATIONS") == ["Capabilities"], proc.stdout  # core's part needs no kit
    refused = _lines(proc.stdout, "REFUSED")
    assert refused == [
        f"{old} {old} moved to offload_testing.{old.rsplit('.', 1)[1]}, in the distribution offload-testing, which is not "
        "installed: pip install offload-testing"
        for old in ("offload.testing.suite", "offload.testing.plugin")
    ], proc.stdout


def test_only_offload_testing_declares_a_pytest_plugin() -> None:
    plugins = {ep.dist.name if ep.dist else None: ep.value for ep in importlib.metadata.entry_points(group="pytest11")}
    assert plugins.get("offload-testing") == "offload_testing.plugin", plugins
    assert not [d for d in plugins if d and d.startswith("offload") and d != "offload-testing"], plugins
