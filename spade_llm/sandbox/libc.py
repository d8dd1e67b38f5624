"""A libc function through ``_ctypes``, for the programs that run inside or beside a sandbox.

``forkserver.py``, ``launcher.py`` and ``harness.py`` run as standalone source (``python -c``, or
compiled from bytes) in an interpreter that cannot import this package, and each needs ``prctl`` or
``unshare``/``mount``. ``import ctypes`` costs several milliseconds there; what ``ctypes/__init__.py``
does to build ``CDLL(None, use_errno=True).<name>`` costs one. So this module's source is put in
front of each of those programs when they are shipped (``common.shipped_source``), and each imports
it from the package only when imported as a module (tests). Stdlib only, no import at module level.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def libc_function(name: str) -> "Any":
    """libc's ``name`` as ``ctypes.CDLL(None, use_errno=True)`` would give it (int result; arguments
    converted the same way: None, bytes, int), without importing ``ctypes``; raises what ``_ctypes``
    raises where it cannot."""
    import _ctypes

    c: Any = _ctypes

    class _CInt(c._SimpleCData):  # type: ignore[misc]  # _ctypes has no stubs: its base classes are Any
        _type_ = "i"

    class _CFunc(c.CFuncPtr):  # type: ignore[misc]  # _ctypes has no stubs: its base classes are Any
        _flags_ = c.FUNCFLAG_CDECL | c.FUNCFLAG_USE_ERRNO
        _restype_ = _CInt

    class _Libc:
        _handle = c.dlopen(None, 0)

    return _CFunc((name, _Libc))
