"""The aclnn operator table: every operator pyaclnn knows, described once
(one module per family: elementwise, reduce, shape, index, matmul, nn, conv, random,
foreach, attention, later).

Each row names the operator, the vendor header that declares it, its
parameters exactly as CANN declares them (without the trailing
``uint64_t *workspaceSize, aclOpExecutor **executor``), and how pyaclnn runs
it: the family (its planner in ``native/ops/<family>/``), the kernel, the
role of each parameter, the dtypes each parameter accepts on Atlas A2 and the
dtype rules. ``tools/gen_ops.py`` derives from it the headers under
``include/aclnnop/``, the descriptors and exported entry points
(``native/ops/gen/optable.c``) and ``docs/operators.md``; the tests derive
their expectations (every NULL, dtype and rank check) from it, and
:mod:`pyaclnn.aclnn` calls any operator by name from it.

Dtype lists use CANN's shorthand: f32 f16 bf16 f64 s8 u8 s16 u16 s32 u32 s64
u64 bool c64 c128 (complex dtypes are accepted by CANN but not implemented by
pyaclnn: they fail with 161002 naming the dtype).

Roles (elementwise families, one per parameter, in API order):
  a b c   kernel inputs (a tensor, or a scalar used as a constant input)
  o       the output;  ao / co: an in-place tensor, input a (c) and output
  p0..p3  a scalar or number passed to the kernel as a parameter
  k       an int, bool or string attribute choosing the kernel (``kernels=`` maps its values)
  dt      a dtype attribute (the output dtype)
  -       not used by the kernel
"""

# ---- dtype shorthand -------------------------------------------------------

DTYPES = {  # shorthand -> (aclDataType name, value)
    "f32": ("ACL_FLOAT", 0), "f16": ("ACL_FLOAT16", 1), "s8": ("ACL_INT8", 2), "s32": ("ACL_INT32", 3),
    "u8": ("ACL_UINT8", 4), "s16": ("ACL_INT16", 6), "u16": ("ACL_UINT16", 7), "u32": ("ACL_UINT32", 8),
    "s64": ("ACL_INT64", 9), "u64": ("ACL_UINT64", 10), "f64": ("ACL_DOUBLE", 11), "bool": ("ACL_BOOL", 12),
    "c64": ("ACL_COMPLEX64", 16), "c128": ("ACL_COMPLEX128", 17), "bf16": ("ACL_BF16", 27),
    "int4": ("ACL_INT4", 29), "c32": ("ACL_COMPLEX32", 33),
}
IMPLEMENTED_DTYPES = ("f32", "f16", "bf16", "f64", "s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64", "bool")

ALL12 = "f32 f16 f64 s32 s64 s16 s8 u8 bool c64 c128 bf16"
FLOAT3 = "f32 f16 bf16"
FLOAT4 = "f32 f16 bf16 f64"
ANY = "f32 f16 bf16 f64 s8 u8 s16 u16 s32 u32 s64 u64 bool c64 c128"
FLOAT_OUT = "f32 f16 f64 c64 c128 bf16"


import re as _re

OUT_NAMES = ("out", "y", "result", "output", "gradInput")


class Param:
    """One parameter of an operator, as the generator and pyaclnn.aclnn see it.
    kind: TENSOR TENSOR_LIST SCALAR SCALAR_LIST INT_ARRAY BOOL_ARRAY FLOAT_ARRAY
    INT FLOAT BOOL DTYPE STRING OUT_U64; io: IN OUT INOUT."""

    def __init__(self, ctype, name, kind, io, optional, dtypes, flags):
        self.ctype, self.name, self.kind, self.io = ctype, name, kind, io
        self.optional, self.dtypes, self.flags = optional, dtypes, flags

    @property
    def decl(self):
        return "%s %s" % (self.ctype, self.name)

    def __repr__(self):
        return "Param(%r, %s, %s)" % (self.name, self.kind, self.io)


def kind_of(ctype):
    t = ctype.replace("const ", "").replace(" ", "")
    for key, kind in (("aclTensorList*", "TENSOR_LIST"), ("aclTensor*", "TENSOR"),
                      ("aclScalarList*", "SCALAR_LIST"), ("aclScalar*", "SCALAR"),
                      ("aclIntArray*", "INT_ARRAY"), ("aclBoolArray*", "BOOL_ARRAY"),
                      ("aclFloatArray*", "FLOAT_ARRAY"), ("aclDataType", "DTYPE"), ("char*", "STRING"),
                      ("uint64_t*", "OUT_U64")):
        if t == key:
            return kind
    if t in ("double", "float"):
        return "FLOAT"
    if t == "bool":
        return "BOOL"
    if t in ("int64_t", "int32_t", "int8_t", "int", "uint64_t", "uint32_t"):
        return "INT"
    raise ValueError("unknown parameter type %r" % ctype)


class Op:
    """One operator. See the module docstring for the fields."""

    def __init__(self, name, header, params, family=None, kernel=None, roles=None, ins=None, outs=None,
                 dtypes=None, compute="promote", outrule="cast", kernels=None, min_rank=0, max_rank=8,
                 note="", flags=(), ws_names=("workspaceSize", "executor"), single=False, issue=None):
        self.name = name                # "Mul": aclnnMul / aclnnMulGetWorkspaceSize
        self.header = header            # "aclnn_mul.h"
        self.params = params            # C parameter list, as CANN declares it
        self.family = family            # planner family; None: not implemented (561003)
        self.kernel = kernel            # the family's kernel (map kernels: PA_K_<kernel>)
        self.roles = roles.split() if isinstance(roles, str) else roles
        self.ins = ins                  # dtypes of the tensor/scalar inputs (shorthand)
        self.outs = outs                # dtypes of the outputs; None = whatever the rule allows
        self.dtypes = dtypes or {}      # per-parameter overrides {name: "f32 f16"}
        self.compute = compute          # compute-dtype rule (native/ops/map/map_rules.c)
        self.outrule = outrule          # output-dtype rule
        self.kernels = kernels or {}    # role k: {attribute value: kernel}, "*" = any other value
        self.min_rank, self.max_rank = min_rank, max_rank
        self.note = note                # what docs/operators.md says about it
        self.flags = tuple(flags)
        self.ws_names = ws_names        # the names of the last two parameters
        self.single = single            # one call, no executor (e.g. CalculateMatmulWeightSizeV2)
        self.issue = issue              # for a planned operator: the issue that brings it

    @property
    def implemented(self):
        return self.family is not None

    def parsed(self):
        """The parameters (Param), in API order."""
        if getattr(self, "_parsed", None) is not None:
            return self._parsed
        params = []
        roles = self.roles or []
        for i, text in enumerate(p.strip() for p in self.params.split(",")):
            m = _re.match(r"^(.*?[\s*])([A-Za-z_][A-Za-z0-9_]*)$", text)
            if not m:
                raise ValueError("%s: cannot parse parameter %r" % (self.name, text))
            ctype, name = " ".join(m.group(1).split()).replace(" *", "*"), m.group(2)
            kind = kind_of(ctype)
            role = roles[i] if i < len(roles) else None
            if role == "o":
                io = "OUT"
            elif role in ("ao", "co"):
                io = "INOUT"
            elif role is not None:
                io = "IN"
            elif ("out:" + name) in self.flags:
                io = "OUT"
            elif name.endswith("Ref"):
                io = "INOUT"
            elif name in OUT_NAMES or _re.search(r"Out(Optional)?$", name):
                io = "OUT"
            else:
                io = "IN"
            optional = name.endswith("Optional") or ("optional:" + name) in self.flags
            if name in self.dtypes:
                dts = self.dtypes[name]
            elif kind in ("TENSOR", "TENSOR_LIST"):
                dts = self.outs if io == "OUT" else self.ins
                if io == "OUT" and dts is None and name.endswith("Ref"):
                    dts = self.ins
            else:
                dts = None
            flags = []
            if ("nz:" + name) in self.flags:
                flags.append("PA_PF_NZ")
            if ("int4:" + name) in self.flags:
                flags.append("PA_PF_INT4")
            if ("empty_any_dtype:" + name) in self.flags:
                flags.append("PA_PF_EMPTY_ANY_DTYPE")
            if optional:
                flags.append("PA_PF_OPTIONAL")
            params.append(Param(ctype, name, kind, io, optional, dts, flags))
        self._parsed = params
        return params

    def __repr__(self):
        return "Op(%r)" % self.name


OPS = []


def op(*args, **kw):
    o = Op(*args, **kw)
    OPS.append(o)
    return o


def _planned(name, header, params, family, issue=23, **kw):
    """An operator whose family is not implemented yet: its entry points exist
    and answer 561003 naming it."""
    return op(name, header, params, family=None, issue=issue, note=kw.pop("note", ""), **kw)



# The table, by family (one module each; each operator appears once).
from . import elementwise, reduce, shape, index, matmul, nn, conv, random, foreach, attention, later  # noqa: E402,F401
from .later import EMPTY_HEADERS  # noqa: E402


def by_name():
    return {o.name: o for o in OPS}


def headers():
    """{header: [ops]} in table order."""
    out = {}
    for o in OPS:
        out.setdefault(o.header, []).append(o)
    return out
