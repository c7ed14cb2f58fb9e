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
