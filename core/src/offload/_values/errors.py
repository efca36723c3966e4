"""The one exception of the API, and error joining.

Exception tree::

    Exception
     └── OffloadError            .code: ErrorCode, .details: str, .errors: tuple[OffloadError, ...]
          ├── OffloadTypeError   also a TypeError: an argument of the wrong type (the object layer)
          └── OffloadValueError  also a ValueError: an argument of the right type but a wrong value

Every ol* function either returns normally (``OL_SUCCESS``) or raises ``OffloadError``. A joined
error (several backends failing at shutdown, say) follows liboffload's rule: its code and details
are those of the *last* error, and ``.errors`` holds every error in order, none dropped.
The object layer raises the two subclasses where Python's habit is a TypeError (a wrong type) or
a ValueError (a wrong value); ``except OffloadError`` catches them all (``offload.OffloadTypeError``
and ``offload.OffloadValueError`` name them; they stay out of ``offload.__all__``, whose ``help()``
the README keeps short).
Backends raise ``OffloadError`` for failures they can name; anything else a backend raises is
mapped at the core boundary (``MemoryError``: ``OUT_OF_RESOURCES``; ``ValueError``, ``TypeError``:
``INVALID_ARGUMENT``; anything else: ``UNKNOWN``) with the original exception kept as ``__cause__``.
An ``ExceptionGroup`` (a backend reporting several failures at once) is joined: each of its
members, nested groups flattened, is mapped and kept in ``.errors``.
"""

from __future__ import annotations

from collections.abc import Iterable

from .enums import ErrorCode


class OffloadError(Exception):
    """An ol* call failed: ``code`` is the ``ol_errc_t``, ``details`` the message."""

    code: ErrorCode
    details: str
    errors: tuple[OffloadError, ...]

    def __init__(self, code: ErrorCode, details: str = "", errors: Iterable[OffloadError] = ()) -> None:
        self.code = ErrorCode(code)
        self.details = details
        self.errors = tuple(errors) or (self,)
        super().__init__(code, details)

    def __str__(self) -> str:
        head = f"OL_ERRC_{self.code.name}: {self.details}" if self.details else f"OL_ERRC_{self.code.name}"
        if len(self.errors) > 1:
            rest = "; ".join(f"OL_ERRC_{e.code.name}: {e.details}" for e in self.errors[:-1])
            head += f" ({len(self.errors)} errors joined; earlier: {rest})"
        return head

    def __repr__(self) -> str:
        return f"OffloadError({self.code!r}, {self.details!r})"

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.code, self.details, self.errors if len(self.errors) > 1 else ()))


class OffloadTypeError(OffloadError, TypeError):
    """An argument of the wrong type (``offload.Buffer(16, device=5)``, ``queue="q"``): an
    ``OffloadError`` with its code (INVALID_ARGUMENT, INVALID_DEVICE, ...) that ``except TypeError``
    also catches, as Python's own functions raise TypeError for a wrong type."""


class OffloadValueError(OffloadError, ValueError):
    """An argument of the right type and a wrong value (an unknown platform name, a negative device
    index): an ``OffloadError`` that ``except ValueError`` also catches."""


def join_errors(errors: Iterable[OffloadError]) -> OffloadError | None:
    """One error for many (None for none): the last error's code and details, all of them kept."""
    flat: list[OffloadError] = []
    for error in errors:
        flat.extend(error.errors)
    if not flat:
        return None
    if len(flat) == 1:
        return flat[0]
    last = flat[-1]
    return OffloadError(last.code, last.details, flat)


def as_offload_error(exc: BaseException, what: str) -> OffloadError:
    """Map any exception raised by a backend to an OffloadError (kept as the cause)."""
    if isinstance(exc, OffloadError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        joined = join_errors(as_offload_error(member, what) for member in exc.exceptions)
        if joined is None:
            joined = OffloadError(ErrorCode.UNKNOWN, f"{what}: an empty exception group")
        if joined.__cause__ is None:
            joined.__cause__ = exc
        return joined
    if isinstance(exc, MemoryError):
        code = ErrorCode.OUT_OF_RESOURCES
    elif isinstance(exc, (ValueError, TypeError)):
        code = ErrorCode.INVALID_ARGUMENT
    else:
        code = ErrorCode.UNKNOWN
    error = OffloadError(code, f"{what}: {type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error

