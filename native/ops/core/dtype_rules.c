#include "ops/core/pa_dtype.h"

bool pa_dt_is_float(aclDataType dt) {
    return dt == ACL_FLOAT || dt == ACL_FLOAT16 || dt == ACL_BF16 || dt == ACL_DOUBLE;
}

bool pa_dt_is_16bit_float(aclDataType dt) { return dt == ACL_FLOAT16 || dt == ACL_BF16; }

bool pa_dt_is_unsigned(aclDataType dt) {
    return dt == ACL_UINT8 || dt == ACL_UINT16 || dt == ACL_UINT32 || dt == ACL_UINT64;
}

bool pa_dt_is_int(aclDataType dt) {
    return dt == ACL_INT8 || dt == ACL_INT16 || dt == ACL_INT32 || dt == ACL_INT64 || pa_dt_is_unsigned(dt);
}

static int float_rank(aclDataType dt) {
    switch (dt) {
    case ACL_FLOAT16: case ACL_BF16: return 1;
    case ACL_FLOAT: return 2;
    case ACL_DOUBLE: return 3;
    default: return 0;
    }
}

static int int_bits(aclDataType dt) {
    switch (dt) {
    case ACL_INT8: case ACL_UINT8: return 8;
    case ACL_INT16: case ACL_UINT16: return 16;
    case ACL_INT32: case ACL_UINT32: return 32;
    case ACL_INT64: case ACL_UINT64: return 64;
    default: return 0;
    }
}

static aclDataType signed_of_bits(int bits) {
    return bits <= 8 ? ACL_INT8 : bits <= 16 ? ACL_INT16 : bits <= 32 ? ACL_INT32 : ACL_INT64;
}

aclDataType pa_dt_promote(aclDataType a, aclDataType b) {
    if (a == b) return a;
    if (a == ACL_BOOL) return b;
    if (b == ACL_BOOL) return a;
    const bool wide_u = a == ACL_UINT16 || a == ACL_UINT32 || a == ACL_UINT64 || b == ACL_UINT16 ||
                        b == ACL_UINT32 || b == ACL_UINT64;
    if (wide_u) return ACL_DT_UNDEFINED;
    const int fa = float_rank(a), fb = float_rank(b);
    if (fa && fb) {
        if (fa == 1 && fb == 1) return ACL_FLOAT; /* FLOAT16 + BF16 */
        return fa > fb ? a : b;
    }
    if (fa) return pa_dt_is_int(b) ? a : ACL_DT_UNDEFINED;
    if (fb) return pa_dt_is_int(a) ? b : ACL_DT_UNDEFINED;
    if (!pa_dt_is_int(a) || !pa_dt_is_int(b)) return ACL_DT_UNDEFINED;
    /* UINT8 with a signed type: the signed type, at least INT16 */
    if (a == ACL_UINT8) return signed_of_bits(int_bits(b) > 8 ? int_bits(b) : 16);
    if (b == ACL_UINT8) return signed_of_bits(int_bits(a) > 8 ? int_bits(a) : 16);
    return int_bits(a) >= int_bits(b) ? a : b;
}

static int kind_of(aclDataType dt) { return dt == ACL_BOOL ? 0 : pa_dt_is_float(dt) ? 2 : 1; }

aclDataType pa_dt_promote_scalar(aclDataType t, aclDataType s) {
    const int kt = kind_of(t), ks = kind_of(s);
    if (ks <= kt) return t;
    return ks == 2 ? ACL_FLOAT : ACL_INT64;
}

bool pa_dt_can_cast(aclDataType from, aclDataType to) {
    if (to == ACL_BOOL) return from == ACL_BOOL;
    if (pa_dt_is_float(from)) return pa_dt_is_float(to);
    return true;
}
