"""Status codes to exceptions, in one place.

Every C call made by the Python layer goes through :func:`check`, which raises
:class:`AclError` carrying the status, the API name and the calling thread's
``aclGetRecentErrMsg()`` text.
"""
from ._ffi import CONSTANT_NAMES, c_string, constants, lib

# Status value -> its first name in the headers (aclError and aclnnStatus
# codes live in disjoint ranges, so one table serves both).
_STATUS_PREFIXES = ("ACL_ERROR_", "ACLNN_ERR_")
_DEPRECATED_ALIASES = {"ACL_ERROR_NONE", "ACLNN_ERR_INNER_KEY_CONFILICT"}


def _status_names():
    values = constants()
    names = {0: "ACL_SUCCESS"}
    for name in CONSTANT_NAMES:
        if name.startswith(_STATUS_PREFIXES) and name not in _DEPRECATED_ALIASES:
            names.setdefault(values[name], name)
    return names


STATUS_NAMES = _status_names()


def status_name(status):
    """Symbolic name of an aclError / aclnnStatus value ("UNKNOWN" if none)."""
    return STATUS_NAMES.get(status, "UNKNOWN")


def get_recent_err_msg():
    """The calling thread's most recent error message (None when the library gives NULL)."""
    return c_string(lib.aclGetRecentErrMsg())


class AclError(RuntimeError):
    """A non-zero aclError / aclnnStatus from the C API.

    Attributes: ``status`` (int), ``api`` (the C function that failed) and
    ``message`` (``aclGetRecentErrMsg()`` right after the failure; may be None
    or empty).
    """

    def __init__(self, status, api, message=None):
        self.status = int(status)
        self.api = api
        self.message = message
        text = "%s failed: status %d (%s)" % (api, self.status, status_name(self.status))
        if message:
            text += ": " + message
        super().__init__(text)

    def __reduce__(self):
        return (type(self), (self.status, self.api, self.message))


def check(status, api):
    """Raise AclError if ``status`` is non-zero; return None otherwise."""
    if status:
        raise AclError(status, api, get_recent_err_msg())
