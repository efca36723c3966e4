"""What the built distributions require: every Requires-Dist the same in sdist and wheel, a PEP 508
requirement without a URL, ours pinned to VERSION, exactly the distributions of ours each needs;
extras declared dynamic where setup.py makes them, each bringing a requirement; hip-python pinned
per ROCm line."""

from __future__ import annotations

import pathlib
import tomllib

import wheelhouse_support as wh
from wheelhouse_support import BACKENDS, DISTRIBUTIONS, EXTRAS, ROOT, VERSION


def test_every_distributions_requires_dist(wheelhouse: pathlib.Path) -> None:
    """Each distribution built by plain ``python -m build`` (sdist, then the wheel from it): the same
    Requires-Dist in both, every one a PEP 508 requirement without a URL, ours pinned ``==VERSION``,
    and exactly the distributions of ours each one needs."""
    from packaging.requirements import Requirement

    texts = wh.metadata_texts(wheelhouse / "wheelhouse")
    by_dist: dict[str, dict[str, list[str]]] = {}
    for name, text in texts.items():
        by_dist.setdefault(wh.dist_of(name), {})["wheel" if name.endswith(".whl") else "sdist"] = wh.requires(text)
    assert set(by_dist) == set(DISTRIBUTIONS), sorted(by_dist)
    extras = {f"offload-{b}" for b in EXTRAS}
    ours_expected = {
        "offload-core": set(),
        **{wh.project_name(ROOT / "backends" / b): {"offload-core"} for b in BACKENDS},
        "offload-remote": {"offload-core", "offload-host"},  # its server runs the host backend
        "offload-testing": {"offload-core"},
        "offload-capi": {"offload-core"},
        "offload": {"offload-core", "offload-host", "offload-testing"} | extras,
    }
    for dist, kinds in sorted(by_dist.items()):
        assert kinds.get("sdist") == kinds.get("wheel"), (dist, kinds)
        ours = set()
        for line in kinds["wheel"]:
            requirement = Requirement(line)
            assert requirement.url is None and "file:" not in line, (dist, line)
            name = wh.normalise(requirement.name)
            if name.startswith("offload"):
                assert str(requirement.specifier) == f"=={VERSION}", (dist, line)
                ours.add(name)
        assert ours == ours_expected[dist], (dist, kinds["wheel"])
    assert "pytest>=8" in by_dist["offload-testing"]["wheel"], by_dist["offload-testing"]
    assert not [l for l in by_dist["offload-core"]["wheel"] if l.startswith("pytest")]  # no pytest, no plugin


def test_extras_of_setup_py_are_declared_dynamic() -> None:
    """setuptools drops ``extras_require`` of a setup.py whose pyproject.toml does not list
    ``optional-dependencies`` as dynamic (offload-cuda[nvrtc] was silently empty so)."""
    for dist, folder in DISTRIBUTIONS.items():
        dynamic = tomllib.loads((folder / "pyproject.toml").read_text())["project"].get("dynamic", [])
        if "extras_require" in (folder / "setup.py").read_text():
            assert "optional-dependencies" in dynamic, f"{dist}: setup.py's extras_require needs dynamic optional-dependencies"


def test_every_extra_requires_something(wheelhouse: pathlib.Path) -> None:
    """Each wheel's extras (at least those the docs name) bring at least one requirement."""
    named = {"offload": {"test", *EXTRAS}, "offload-cuda": {"nvrtc"}, "offload-amdgpu": {"rocm6-4", "rocm10-0"}}
    for name, text in wh.metadata_texts(wheelhouse / "wheelhouse").items():
        if not name.endswith(".whl"):
            continue
        extras = {l.split(":", 1)[1].strip() for l in text.splitlines() if l.startswith("Provides-Extra:")}
        assert named.get(wh.dist_of(name), set()) <= extras, (name, extras)
        for extra in extras:
            assert [r for r in wh.requires(text) if f'extra == "{extra}"' in r], (name, extra)


def test_amdgpu_pins_hip_python_per_rocm_line(wheelhouse: pathlib.Path) -> None:
    """offload-amdgpu's extras rocm<major>-<minor> each pin hip-python to that ROCm line."""
    from packaging.requirements import Requirement

    (wheel,) = [n for n in wh.metadata_texts(wheelhouse / "wheelhouse") if n.startswith("offload_amdgpu-") and n.endswith(".whl")]
    text = wh.metadata_texts(wheelhouse / "wheelhouse")[wheel]
    extras = [l.split(":", 1)[1].strip() for l in text.splitlines() if l.startswith("Provides-Extra:")]
    assert {"rocm6-4", "rocm7-2", "rocm10-0"} <= set(extras), extras
    for extra in extras:
        (pin,) = [Requirement(r) for r in wh.requires(text) if f'extra == "{extra}"' in r]
        major, minor = extra.removeprefix("rocm").split("-")
        assert pin.name == "hip-python" and pin.specifier == Requirement(f"x>={major}.{minor},<{major}.{int(minor) + 1}").specifier
