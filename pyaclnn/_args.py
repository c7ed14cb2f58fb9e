"""Exact argument conversion for the operator functions.

A Python value becomes a C argument only when the conversion loses nothing:
integers stay integers (Python int or numpy integer; a float, bool or str is a
TypeError even when it holds a whole number), strings carry no NUL byte, masks
are bool (or integer 0/1). Errors name the argument.
"""
import numbers

import numpy as np

__all__ = ["as_int", "as_int_list", "as_double", "as_bool", "as_layout", "as_mask", "MAX_DIMS",
           "check_rank"]

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
MAX_DIMS = 8  # aclCreateTensor's limit on viewDimsNum / storageDimsNum


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def as_int(name, value):
    """`value` as a Python int in int64 range. TypeError unless it is an int or
    a numpy integer (bool, float and str are refused); ValueError outside int64."""
    if not _is_int(value):
        raise TypeError("%s must be an integer, got %s %r" % (name, type(value).__name__, value))
    value = int(value)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError("%s must fit in int64, got %d" % (name, value))
    return value


def as_int_list(name, values):
    """A list of int64 values from a sequence of integers or a 1-D integer
    numpy array; None stays None (a NULL aclIntArray). Each element follows
    :func:`as_int`."""
    if values is None:
        return None
    if isinstance(values, (str, bytes)):
        raise TypeError("%s must be a sequence of integers, got %s" % (name, type(values).__name__))
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise ValueError("%s must be 1-D, got a %d-D array" % (name, values.ndim))
        if values.dtype.kind not in "iu":
            raise TypeError("%s must hold integers, got dtype %s" % (name, values.dtype))
    try:
        items = list(values)
    except TypeError:
        raise TypeError("%s must be a sequence of integers, got %s" % (name, type(values).__name__)) from None
    return [as_int("%s[%d]" % (name, i), v) for i, v in enumerate(items)]


def as_double(name, value):
    """A real number for a C double: int, float or a numpy integer/floating
    scalar (NaN and inf pass; the C layer decides). TypeError for anything else
    (bool, str, complex, arrays)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.integer, np.floating)):
        raise TypeError("%s must be a real number, got %s %r" % (name, type(value).__name__, value))
    return float(value)


def as_bool(name, value):
    """A bool from a bool, numpy bool, or the integers 0 / 1."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if _is_int(value) and int(value) in (0, 1):
        return bool(value)
    raise TypeError("%s must be a bool, got %s %r" % (name, type(value).__name__, value))


def as_layout(name, value):
    """The bytes of a layout string such as "TND" (str or bytes, no NUL)."""
    if isinstance(value, str):
        data = value.encode("utf-8")
    elif isinstance(value, (bytes, bytearray)):
        data = bytes(value)
    else:
        raise TypeError("%s must be a str, got %s %r" % (name, type(value).__name__, value))
    if b"\0" in data:
        raise ValueError("%s must not contain a NUL character, got %r" % (name, value))
    return data


def check_rank(name, array):
    """ValueError if `array` has more dims than an aclTensor can hold."""
    if array.ndim > MAX_DIMS:
        raise ValueError("%s has %d dims; an aclTensor holds at most %d" % (name, array.ndim, MAX_DIMS))
    return array


def as_mask(name, mask):
    """A mask array for a BOOL mask tensor: bool arrays pass; integer arrays
    must hold only 0 and 1 (ValueError otherwise) and become bool; any other
    dtype (a float mask, ...) is passed through unchanged so that the C layer
    rejects it with its own status (161002 for a FLOAT mask)."""
    mask = np.asarray(mask)
    if mask.dtype == np.bool_:
        return mask
    if mask.dtype.kind in "iu":
        if mask.size and not np.all((mask == 0) | (mask == 1)):
            bad = mask[(mask != 0) & (mask != 1)].flat[0]
            raise ValueError("%s: an integer mask must hold only 0 and 1, got %r" % (name, bad.item()))
        return mask.astype(np.bool_)
    return mask
