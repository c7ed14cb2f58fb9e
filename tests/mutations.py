"""Mutations for the table-driven error tests: each returns f(p) that changes one
thing of a valid problem dict p (numpy inputs, (shape, dtype) outputs, attributes,
and p["formats"] mapping tensor names to aclFormat values)."""
import numpy as np


def cast(name, dt):
    def f(p):
        if isinstance(p[name], tuple):
            p[name] = (p[name][0], np.dtype(dt))
        else:
            p[name] = p[name].astype(dt)
    return f


def reshape(name, shape):
    def f(p):
        if isinstance(p[name], tuple):
            p[name] = (tuple(shape), p[name][1])
        else:
            p[name] = np.zeros(shape, p[name].dtype)
    return f


def setv(**kw):
    return lambda p: p.update(kw)


def fmt(name, format_value):
    return lambda p: p["formats"].__setitem__(name, format_value)


def both(*fs):
    def f(p):
        for g in fs:
            g(p)
    return f


def expect_rejected(call, status, api, needle, case_id=""):
    """call() must raise pyaclnn.AclError from `api` with `status`, a message that
    contains `needle` (any case), and the same text from aclGetRecentErrMsg().
    Returns the error."""
    import pyaclnn
    import pytest

    with pytest.raises(pyaclnn.AclError) as ei:
        call()
    err = ei.value
    assert err.status == status, f"{case_id}: status {err.status} ({err.message})"
    assert err.api == api
    assert err.message and needle.lower() in err.message.lower(), f"{case_id}: {needle!r} not in {err.message!r}"
    assert pyaclnn.get_recent_err_msg() == err.message
    return err
