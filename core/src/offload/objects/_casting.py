"""How ``Array.copy_from`` takes a host source: numpy's casting rules, checked and applied."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._values.enums import ErrorCode
from .._values.errors import OffloadError, OffloadTypeError, OffloadValueError

if TYPE_CHECKING:
    from numpy.typing import NDArray


_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")  # numpy's casting rules


def check_casting(casting: Any) -> None:
    """INVALID_ARGUMENT for anything but one of numpy's casting rule names."""
    if not isinstance(casting, str):
        raise OffloadTypeError(ErrorCode.INVALID_ARGUMENT, f"casting must be one of {_CASTINGS}, got {casting!r}")
    if casting not in _CASTINGS:
        raise OffloadValueError(ErrorCode.INVALID_ARGUMENT, f"casting must be one of {_CASTINGS}, got {casting!r}")


def cast_refused(source: Any, target: Any, casting: str) -> OffloadTypeError:
    return OffloadTypeError(
        ErrorCode.INVALID_ARGUMENT,
        f"copy_from: cannot convert {source} to {target} under casting={casting!r} (numpy's rule); "
        "pass casting='unsafe' to convert anyway",
    )


def host_source(np: Any, source: Any, dtype: Any, shape: tuple[int, ...], casting: str) -> NDArray[Any]:
    """``source`` as a C-contiguous host array of ``dtype`` and ``shape``: converted as
    ``numpy.copyto(out, source, casting=casting)`` converts it (a Python scalar by its value, as
    numpy does); INVALID_ARGUMENT naming the shapes, or the dtypes numpy refuses to convert."""
    try:
        host = np.asarray(source, order="C")
    except (TypeError, ValueError) as error:
        raise OffloadTypeError(
            ErrorCode.INVALID_ARGUMENT, f"copy_from: a {type(source).__name__} is not an array numpy can read: {error}"
        ) from None
    if host.shape != shape:
        raise OffloadError(ErrorCode.INVALID_ARGUMENT, f"source shape {host.shape} does not match the array's {shape}")
    if host.dtype == dtype:
        return host  # type: ignore[no-any-return]
    out = np.empty(shape, dtype)
    try:
        np.copyto(out, source if type(source) in (int, float, complex, bool) else host, casting=casting)
    except TypeError:
        raise cast_refused(host.dtype, dtype, casting) from None
    except ValueError as error:  # a value numpy cannot convert (a string that is not a number)
        raise OffloadValueError(ErrorCode.INVALID_ARGUMENT, f"copy_from: {error}") from None
    return out  # type: ignore[no-any-return]


