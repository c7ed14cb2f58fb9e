"""cffi bindings (ABI mode) and the choice of backend library.

The declarations come from ``_home/share/cdef.h``, generated at build time from
the public headers by ``tools/gen_cdef.py``. The same declarations bind either
to the bundled CPU emulation (``_home/lib64``) or to a real CANN toolkit:

``PYACLNN_BACKEND=cpu``   the bundled libraries;
``PYACLNN_BACKEND=cann``  ``$ASCEND_HOME_PATH`` or ``$ASCEND_TOOLKIT_HOME`` ``/lib64``;
``PYACLNN_BACKEND=auto``  (default) CANN when one of those variables names a
                          toolkit with all three libraries that is not this
                          package's own ``_home``, else the bundled libraries.

The libraries are opened lazily, on the first attribute access of ``lib``, so
that ``python -m pyaclnn home`` works even when a backend cannot be loaded.
"""
import os
import re
import threading

import cffi

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _find_home():
    """The toolkit root built by `pip install .`: inside this package, or, when this
    is the source tree (e.g. `python -m pyaclnn` run from the repository root), the
    one of the installed pyaclnn distribution."""
    here = os.path.join(PACKAGE_DIR, "_home")
    if os.path.isdir(here):
        return here
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        installed = str(distribution("pyaclnn").locate_file("pyaclnn/_home"))
        if os.path.isdir(installed):
            return installed
    except (ImportError, PackageNotFoundError):
        pass
    return here


HOME = _find_home()
CDEF_PATH = os.path.join(HOME, "share", "cdef.h")
LIB_NAMES = ("libascendcl.so", "libnnopbase.so", "libopapi.so")
# Loaded too when a CANN toolkit has them (HCCL: pyaclnn.hccl).
OPTIONAL_LIB_NAMES = ("libhccl.so", "libhcomm.so")
TOOLKIT_VARS = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")
BACKENDS = ("cpu", "cann", "auto")

# Prefix of the functions that only pyaclnn's own library provides.
EXT_PREFIX = "pyaclnn"


class BackendError(OSError):
    """The requested backend library could not be found or loaded."""


def _read_cdef():
    try:
        with open(CDEF_PATH) as f:
            return f.read()
    except OSError as e:
        raise ImportError(
            "pyaclnn: %s is missing: this is a source tree, not an installed package "
            "(run `pip install .`, and import pyaclnn from outside the source directory)"
            % CDEF_PATH) from e


CDEF = _read_cdef()
ffi = cffi.FFI()
ffi.cdef(CDEF)

# Names of every integer constant in the cdef (#define, static const, enum
# members), in declaration order. cffi serves their values from the cdef
# through any library handle; the process itself (dlopen(NULL)) is enough.
_CONST_NAME = re.compile(
    r"^#define\s+(\w+)\s|static\s+const\s+\w+\s+(\w+)\s*=|^\s*((?:ACL|HCCL)\w*)\s*=", re.M)
CONSTANT_NAMES = tuple(dict.fromkeys(
    a or b or c for a, b, c in _CONST_NAME.findall(CDEF)))
# Names of every function declared in the cdef.
def _function_names(text):
    text = re.sub(r"/\*.*?\*/|^#[^\n]*$", "", text, flags=re.S | re.M)
    names = []
    for stmt in text.split(";"):
        stmt = stmt.strip()
        if stmt.startswith(("typedef", "static")):
            continue
        m = re.match(r"[^(]*?\b(\w+)\s*\(", stmt)
        if m:
            names.append(m.group(1))
    return tuple(dict.fromkeys(names))


FUNCTION_NAMES = _function_names(CDEF)


_CONSTANTS = ffi.dlopen(None)
_CONSTANT_SET = frozenset(CONSTANT_NAMES)


def constants():
    """{name: value} of every integer constant declared in the headers."""
    return {name: getattr(_CONSTANTS, name) for name in CONSTANT_NAMES}


def _same_dir(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _toolkit_candidates():
    """(variable, root) for each toolkit variable that is set, in lookup order."""
    out = []
    for var in TOOLKIT_VARS:
        root = os.environ.get(var)
        if root:
            out.append((var, root))
    return out


def _missing_libs(root):
    return [n for n in LIB_NAMES if not os.path.isfile(os.path.join(root, "lib64", n))]


def _with_optional(lib_dir):
    """The three libraries of lib_dir, then those of OPTIONAL_LIB_NAMES it has."""
    return ([os.path.join(lib_dir, n) for n in LIB_NAMES]
            + [os.path.join(lib_dir, n) for n in OPTIONAL_LIB_NAMES
               if os.path.isfile(os.path.join(lib_dir, n))])


def select_backend():
    """Return (backend, [library paths]) from PYACLNN_BACKEND and the environment."""
    choice = os.environ.get("PYACLNN_BACKEND", "auto").strip().lower() or "auto"
    if choice not in BACKENDS:
        raise BackendError("PYACLNN_BACKEND=%r: expected one of %s" % (choice, ", ".join(BACKENDS)))
    # the bundled libhccl / libhcomm only forward to libascendcl, which has HCCL
    bundled = ("cpu", [os.path.join(HOME, "lib64", n) for n in LIB_NAMES])
    if choice == "cpu":
        return bundled
    failures = []
    for var, root in _toolkit_candidates():
        missing = _missing_libs(root)
        if missing:
            failures.extend("%s=%s: no %s" % (var, root, os.path.join(root, "lib64", n))
                            for n in missing)
            continue
        if choice == "auto" and _same_dir(root, HOME):
            continue  # our own toolkit, e.g. after sourcing _home/set_env.sh
        return "cann", _with_optional(os.path.join(root, "lib64"))
    if choice == "cann":
        if not failures:
            failures.append("neither %s is set" % " nor ".join(TOOLKIT_VARS))
        raise BackendError("PYACLNN_BACKEND=cann: no CANN toolkit found:\n  "
                           + "\n  ".join(failures))
    return bundled


class _Lib:
    """All three libraries behind one attribute namespace.

    An attribute is looked up in libascendcl, libnnopbase and libopapi in turn
    and cached. Integer constants are served from the cdef and need no library.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._handles = None
        self._backend = None
        self._paths = None

    def _load(self):
        with self._lock:
            if self._handles is not None:
                return
            backend, paths = select_backend()
            handles = []
            flags = ffi.RTLD_NOW | ffi.RTLD_GLOBAL
            for path in paths:
                try:
                    handles.append(ffi.dlopen(path, flags))
                except OSError as e:
                    raise BackendError("pyaclnn (%s backend): cannot load %s: %s"
                                       % (backend, path, e)) from e
            self._backend, self._paths, self._handles = backend, paths, handles

    @property
    def backend(self):
        self._load()
        return self._backend

    @property
    def paths(self):
        self._load()
        return list(self._paths)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if name in _CONSTANT_SET:
            value = self.__dict__[name] = getattr(_CONSTANTS, name)
            return value
        self._load()
        if name.startswith(EXT_PREFIX) and self._backend != "cpu":
            raise NotImplementedError(
                "%s is a pyaclnn extension: it exists only in the cpu backend "
                "(this process uses the %s backend: %s)"
                % (name, self._backend, ", ".join(self._paths)))
        for handle in self._handles:
            try:
                value = getattr(handle, name)
            except AttributeError:
                continue
            self.__dict__[name] = value  # later lookups skip __getattr__
            return value
        raise AttributeError("%s: not found in %s (%s backend)"
                             % (name, ", ".join(self._paths), self._backend))

    def __dir__(self):
        return sorted(set(FUNCTION_NAMES) | set(CONSTANT_NAMES))


lib = _Lib()


def backend():
    """"cpu" (bundled emulation) or "cann" (a CANN toolkit's libraries)."""
    return lib.backend


def library_paths():
    """Paths of the libraries this process loaded (the three, then a toolkit's libhccl / libhcomm)."""
    return lib.paths


def has_extensions():
    """True when the pyaclnn* extension functions are available (cpu backend)."""
    return lib.backend == "cpu"


def as_ptr(x):
    """A void* cdata for an int address, a cdata pointer, a buffer-like object
    with a ``ptr`` attribute (DeviceBuffer), or None (NULL)."""
    if x is None:
        return ffi.NULL
    if isinstance(x, ffi.CData):
        return ffi.cast("void *", x)
    ptr = getattr(x, "ptr", None)
    if ptr is not None:
        x = ptr
    if isinstance(x, int):
        return ffi.cast("void *", x)
    raise TypeError("expected an address (int), a cdata pointer, a DeviceBuffer or None, got %r"
                    % type(x).__name__)


def c_string(ptr):
    """Decode a NULL-able ``const char *`` to str (None for NULL)."""
    if ptr == ffi.NULL:
        return None
    return ffi.string(ptr).decode("utf-8", "replace")
