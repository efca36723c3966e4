"""A private on-disk cache of built code, trusted only when nobody else could have written it.

Built code is later loaded into the process, and a cache key is computable from public source, so
a file is used only under the rule of pip's and ccache's caches: the folder is created private
(0700); a folder or file not owned by this user, or writable by group or others, or a file that is
not a regular one (never following a link), is not used: one warning (of the cache's class) names
it, and the caller builds without the cache. Writes are atomic (a private temporary file renamed
into place), so a reader in another process sees a whole entry or none. Every failure to read or
write only costs a rebuild.

The folder: ``$<env>`` when set, else ``<name>`` in the XDG Base Directory cache folder
(``$XDG_CACHE_HOME`` when set to an absolute path, the specification ignoring a relative one, else
``~/.cache``). ``$<env>=off`` turns the disk cache off.
"""

from __future__ import annotations

import os
import pathlib
import stat
import threading
import warnings

__all__ = ["DiskCache", "OffloadCacheWarning", "cache_key"]


class OffloadCacheWarning(UserWarning):
    """A disk cache of built code is not private to this user, so it is not used."""


def cache_key(*parts: str | bytes) -> str:
    """A hex SHA-256 of ``parts``, each length-prefixed (no two lists of parts share a key)."""
    import hashlib  # at the first key: OpenSSL's loading is not every olInit's (start-up)

    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def _unsafe(info: os.stat_result, what: str) -> str | None:
    """Why a folder or file with ``info`` could have been written by someone else, or None."""
    if info.st_uid != os.geteuid():
        return f"{what} is owned by uid {info.st_uid}, not by this user (uid {os.geteuid()})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{what} is writable by group or others (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


class DiskCache:
    """Entries ``<key><suffix>`` in the folder named above; ``who`` names the cache in warnings."""

    def __init__(self, name: str, env: str, suffix: str, who: str, warning: type[Warning] = OffloadCacheWarning) -> None:
        self.name, self.env, self.suffix, self.who, self.warning = name, env, suffix, who, warning
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    def folder(self) -> pathlib.Path | None:
        """Where the entries go (None: ``$<env>=off``), read from the environment each time."""
        value = os.environ.get(self.env)
        if value:
            return None if value.strip().lower() == "off" else pathlib.Path(value)
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        base = pathlib.Path(xdg) if os.path.isabs(xdg) else pathlib.Path.home() / ".cache"
        return base / self.name

    def _distrust(self, path: pathlib.Path, why: str) -> None:
        key = f"{path}\0{why}"
        with self._lock:
            if key in self._warned:
                return
            self._warned.add(key)
        warnings.warn(
            f"{self.who}: not using the program cache {path}: {why}; building without it "
            f"(make it private: chmod 700, owned by you, or set {self.env})",
            self.warning,
            stacklevel=5,
        )

    def _trusted_folder(self) -> pathlib.Path | None:
        """The folder, created private if missing; None (after one warning) when untrusted."""
        directory = self.folder()
        if directory is None:
            return None
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            info = directory.stat()
        except OSError as exc:
            self._distrust(directory, f"it cannot be created: {exc.strerror or exc}")
            return None
        why = "it is not a directory" if not stat.S_ISDIR(info.st_mode) else _unsafe(info, "the folder")
        if why is not None:
            self._distrust(directory, why)
            return None
        return directory

    def get(self, key: str) -> bytes | None:
        """The entry, if the folder and the file are trusted; None when absent or untrusted."""
        directory = self._trusted_folder()
        if directory is None:
            return None
        path = directory / f"{key}{self.suffix}"
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None  # absent (or a link: put() renames a file over it)
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            why = "it is not a regular file" if not stat.S_ISREG(info.st_mode) else _unsafe(info, f"the file {path.name}")
            if why is not None:
                self._distrust(path, why)
                return None
            try:
                return f.read()
            except OSError:
                return None

    def put(self, key: str, data: bytes) -> None:
        """Store an entry (best effort: an unwritable or untrusted folder only costs a rebuild)."""
        import tempfile  # at the first store, not by every olInit (start-up)

        directory = self._trusted_folder()
        if directory is None:
            return
        try:
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{key}.", suffix=".tmp")  # mode 0600
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, directory / f"{key}{self.suffix}")
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            pass
