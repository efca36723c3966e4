"""How the layer reads platform and backend names (``devices(platform=..., backend=...)``, device ids)."""

from __future__ import annotations

import operator
from typing import Any

from .._values.enums import ErrorCode, PlatformBackend
from .._values.errors import OffloadTypeError, OffloadValueError


def platform_named(ctx: Any, name: str, prefix: str = "", code: ErrorCode = ErrorCode.INVALID_ARGUMENT) -> Any:
    """The platform handle called ``name``: the exact name, else the one name equal ignoring case
    (``"HOST"`` is ``"host"``, as the ``backend=`` names are); ``code`` naming the platforms there
    are otherwise (after ``prefix``)."""
    handles = list(ctx.platforms)
    for handle in handles:
        if handle.name == name:
            return handle
    folded = [h for h in handles if h.name.casefold() == name.casefold()]
    if len(folded) == 1:
        return folded[0]
    there = ", ".join(repr(h.name) for h in handles) or "none"
    raise OffloadValueError(
        code,
        f"{prefix}no platform {name!r}: the platforms are {there} (`offload backends` says which backends are "
        "installed and why one did not load)",
    )


def as_backend(backend: Any) -> PlatformBackend:
    """A ``PlatformBackend`` from itself, its value or its name in any case (INVALID_ENUMERATION otherwise)."""
    if isinstance(backend, str):
        try:
            backend = PlatformBackend[backend.upper()]
        except KeyError:
            names = ", ".join(b.name.lower() for b in PlatformBackend)
            raise OffloadValueError(
                ErrorCode.INVALID_ENUMERATION, f"unknown backend {backend!r} (one of {names})"
            ) from None
    elif not isinstance(backend, PlatformBackend):
        try:
            backend = PlatformBackend(operator.index(backend))
        except TypeError:
            raise OffloadTypeError(
                ErrorCode.INVALID_ENUMERATION, f"backend must be a PlatformBackend or its name, got {backend!r}"
            ) from None
        except ValueError:
            raise OffloadValueError(ErrorCode.INVALID_ENUMERATION, f"unknown backend {backend!r}") from None
    return backend  # type: ignore[no-any-return]
