"""Where clang-19 cannot be installed, the AMDGPU program tests skip with the reason (the
install step itself is exercised for real by the session fixtures on a root machine with apt)."""

from __future__ import annotations

import pytest

import hipsim


def _no_clang(name: str) -> str | None:
    return None if name in (hipsim.CLANG, "ld.lld-19", "clang-offload-bundler-19") else f"/usr/bin/{name}"


def test_not_root_is_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hipsim.shutil, "which", _no_clang)
    monkeypatch.setattr(hipsim.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(hipsim, "bundler", lambda: False)
    with pytest.raises(hipsim.Unavailable, match="cannot be: not root, so apt-get install is not possible"):
        hipsim.clang_toolchain()


def test_no_apt_is_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hipsim.shutil, "which", lambda name: None)
    monkeypatch.setattr(hipsim.os, "geteuid", lambda: 0)
    monkeypatch.setattr(hipsim, "bundler", lambda: False)
    with pytest.raises(hipsim.Unavailable, match="no apt-get on this machine"):
        hipsim.clang_toolchain()
    with pytest.raises(hipsim.Unavailable, match="apt-get / dpkg are not available"):
        hipsim.unpack_real_hip(hipsim.Path("/nonexistent-real-hip"))


def test_image_hash_is_the_cores() -> None:
    """FNV-1a 64, as sim_image_hash (the registry key of host builds)."""
    assert hipsim.fnv1a64(b"") == 0xCBF29CE484222325
    assert hipsim.fnv1a64(b"a") == 0xAF63DC4C8601EC8C
