/* aclopAttr: a set of named attributes for the single-operator API. Handles are
 * entered in the registry of live handles (meta/pa_handles.h), so a destroyed
 * or foreign pointer is an error, not a read of memory pyaclnn does not own. */
#include <stdlib.h>
#include <string.h>

#include "aclop/pa_aclop.h"
#include "meta/pa_handles.h"
#include "runtime/pa_rt_base.h"

#define PA_ATTR_NAME_MAX 256

typedef struct pa_attr {
    char *name;
    pa_attr_kind kind;
    union {
        bool b;
        int64_t i;
        float f;
        aclDataType dt;
        char *s;
    } v;
} pa_attr;

struct aclopAttr {
    size_t n, cap;
    pa_attr *items;
};

const char *pa_attr_kind_name(pa_attr_kind kind) {
    switch (kind) {
    case PA_ATTR_BOOL: return "bool";
    case PA_ATTR_INT: return "int";
    case PA_ATTR_FLOAT: return "float";
    case PA_ATTR_STRING: return "string";
    case PA_ATTR_DATA_TYPE: return "data type";
    case PA_ATTR_LIST: return "list";
    default: return "?";
    }
}

bool pa_attr_is_live(const aclopAttr *attr) { return attr != NULL && pa_handle_live(attr, PA_HANDLE_OP_ATTR); }

PA_API aclopAttr *aclopCreateAttr(void) {
    aclopAttr *a = calloc(1, sizeof *a);
    if (a == NULL || !pa_handle_register(a, PA_HANDLE_OP_ATTR)) {
        free(a);
        pa_rt_fail_oom("aclopCreateAttr", "the attribute set");
        return NULL;
    }
    return a;
}

static void item_clear(pa_attr *it) {
    if (it->kind == PA_ATTR_STRING) free(it->v.s);
    it->v.s = NULL;
}

PA_API void aclopDestroyAttr(const aclopAttr *attr) {
    if (attr == NULL) return;
    if (pa_handle_take("aclopDestroyAttr", "attr", attr, PA_HANDLE_OP_ATTR) != 0) {
        pa_rt_note_error(ACL_ERROR_INVALID_PARAM); /* message set: destroyed twice, or not an aclopAttr */
        return;
    }
    aclopAttr *a = (aclopAttr *)(uintptr_t)attr;
    for (size_t i = 0; i < a->n; i++) {
        item_clear(&a->items[i]);
        free(a->items[i].name);
    }
    free(a->items);
    a->items = NULL;
    a->n = a->cap = 0;
    pa_handle_retire(a, PA_HANDLE_OP_ATTR);
}

/* The slot for attrName (existing, cleared, or new); NULL after pa_rt_fail. */
static pa_attr *slot_for(const char *api, aclopAttr *attr, const char *attrName) {
    if (attr == NULL) {
        pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: attr must not be NULL", api);
        return NULL;
    }
    if (!pa_attr_is_live(attr)) {
        pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: attr %p is not a live aclopAttr (destroyed, or not made by "
                   "aclopCreateAttr)", api, (const void *)attr);
        return NULL;
    }
    if (attrName == NULL || attrName[0] == '\0') {
        pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: attrName must be a non-empty string", api);
        return NULL;
    }
    const size_t len = strnlen(attrName, PA_ATTR_NAME_MAX);
    if (len >= PA_ATTR_NAME_MAX) {
        pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: attrName must be shorter than %d bytes", api, PA_ATTR_NAME_MAX);
        return NULL;
    }
    for (size_t i = 0; i < attr->n; i++) {
        if (strcmp(attr->items[i].name, attrName) == 0) {
            item_clear(&attr->items[i]);
            return &attr->items[i];
        }
    }
    if (attr->n == attr->cap) {
        const size_t ncap = attr->cap ? attr->cap * 2 : 4;
        pa_attr *ni = realloc(attr->items, ncap * sizeof *ni);
        if (ni == NULL) {
            pa_rt_fail_oom(api, "the attribute table");
            return NULL;
        }
        attr->items = ni;
        attr->cap = ncap;
    }
    char *name = malloc(len + 1);
    if (name == NULL) {
        pa_rt_fail_oom(api, "the attribute's name");
        return NULL;
    }
    memcpy(name, attrName, len + 1);
    pa_attr *it = &attr->items[attr->n++];
    memset(it, 0, sizeof *it);
    it->name = name;
    return it;
}

PA_API aclError aclopSetAttrBool(aclopAttr *attr, const char *attrName, uint8_t attrValue) {
    pa_attr *it = slot_for("aclopSetAttrBool", attr, attrName);
    if (it == NULL) return ACL_ERROR_INVALID_PARAM;
    it->kind = PA_ATTR_BOOL;
    it->v.b = attrValue != 0;
    return ACL_SUCCESS;
}

PA_API aclError aclopSetAttrInt(aclopAttr *attr, const char *attrName, int64_t attrValue) {
    pa_attr *it = slot_for("aclopSetAttrInt", attr, attrName);
    if (it == NULL) return ACL_ERROR_INVALID_PARAM;
    it->kind = PA_ATTR_INT;
    it->v.i = attrValue;
    return ACL_SUCCESS;
}

PA_API aclError aclopSetAttrFloat(aclopAttr *attr, const char *attrName, float attrValue) {
    pa_attr *it = slot_for("aclopSetAttrFloat", attr, attrName);
    if (it == NULL) return ACL_ERROR_INVALID_PARAM;
    it->kind = PA_ATTR_FLOAT;
    it->v.f = attrValue;
    return ACL_SUCCESS;
}

PA_API aclError aclopSetAttrDataType(aclopAttr *attr, const char *attrName, aclDataType attrValue) {
    pa_attr *it = slot_for("aclopSetAttrDataType", attr, attrName);
    if (it == NULL) return ACL_ERROR_INVALID_PARAM;
    it->kind = PA_ATTR_DATA_TYPE;
    it->v.dt = attrValue;
    return ACL_SUCCESS;
}

PA_API aclError aclopSetAttrString(aclopAttr *attr, const char *attrName, const char *attrValue) {
    if (attrValue == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclopSetAttrString: attrValue must not be NULL");
    }
    const size_t n = strlen(attrValue);
    char *copy = malloc(n + 1);
    if (copy == NULL) return pa_rt_fail_oom("aclopSetAttrString", "the string");
    memcpy(copy, attrValue, n + 1);
    pa_attr *it = slot_for("aclopSetAttrString", attr, attrName);
    if (it == NULL) {
        free(copy);
        return ACL_ERROR_INVALID_PARAM;
    }
    it->kind = PA_ATTR_STRING;
    it->v.s = copy;
    return ACL_SUCCESS;
}

/* Lists: checked and recorded by name and kind; their values are not kept, as
 * no op type pyaclnn runs reads a list attribute (one that does would fail with
 * ACL_ERROR_OP_NOT_FOUND before). */
static aclError set_list(const char *api, aclopAttr *attr, const char *attrName, int num, const void *values) {
    if (num < 0) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: numValues must be >= 0, got %d", api, num);
    if (num > 0 && values == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: values must not be NULL when numValues (%d) > 0", api, num);
    }
    pa_attr *it = slot_for(api, attr, attrName);
    if (it == NULL) return ACL_ERROR_INVALID_PARAM;
    it->kind = PA_ATTR_LIST;
    return ACL_SUCCESS;
}

PA_API aclError aclopSetAttrListDataType(aclopAttr *attr, const char *attrName, int numValues,
                                         const aclDataType values[]) {
    return set_list("aclopSetAttrListDataType", attr, attrName, numValues, values);
}

PA_API aclError aclopSetAttrListBool(aclopAttr *attr, const char *attrName, int numValues, const uint8_t *values) {
    return set_list("aclopSetAttrListBool", attr, attrName, numValues, values);
}

PA_API aclError aclopSetAttrListInt(aclopAttr *attr, const char *attrName, int numValues, const int64_t *values) {
    return set_list("aclopSetAttrListInt", attr, attrName, numValues, values);
}

PA_API aclError aclopSetAttrListFloat(aclopAttr *attr, const char *attrName, int numValues, const float *values) {
    return set_list("aclopSetAttrListFloat", attr, attrName, numValues, values);
}

PA_API aclError aclopSetAttrListString(aclopAttr *attr, const char *attrName, int numValues, const char **values) {
    for (int i = 0; values != NULL && i < numValues; i++) {
        if (values[i] == NULL) {
            return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclopSetAttrListString: values[%d] must not be NULL", i);
        }
    }
    return set_list("aclopSetAttrListString", attr, attrName, numValues, values);
}

PA_API aclError aclopSetAttrListListInt(aclopAttr *attr, const char *attrName, int numLists, const int *numValues,
                                        const int64_t *const values[]) {
    const char *api = "aclopSetAttrListListInt";
    if (numLists > 0 && numValues == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: numValues must not be NULL when numLists (%d) > 0", api,
                          numLists);
    }
    for (int i = 0; values != NULL && i < numLists; i++) {
        if (numValues[i] < 0 || (numValues[i] > 0 && values[i] == NULL)) {
            return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: list %d must have numValues >= 0 and values not NULL",
                              api, i);
        }
    }
    return set_list(api, attr, attrName, numLists, values);
}

/* ---- lookups for the op adapters ---- */

static const pa_attr *find(const aclopAttr *attr, const char *name) {
    if (attr == NULL) return NULL;
    for (size_t i = 0; i < attr->n; i++) {
        if (strcmp(attr->items[i].name, name) == 0) return &attr->items[i];
    }
    return NULL;
}

static int kind_mismatch(const char *op, const pa_attr *it, const char *want) {
    return pa_rt_fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "aclopCompileAndExecute: op %s: attribute %s must be %s, got a %s",
                      op, it->name, want, pa_attr_kind_name(it->kind));
}

int pa_attr_get_float(const char *op, const aclopAttr *attr, const char *name, float *out, bool *found) {
    const pa_attr *it = find(attr, name);
    *found = it != NULL;
    if (it == NULL) return 0;
    switch (it->kind) {
    case PA_ATTR_FLOAT: *out = it->v.f; return 0;
    case PA_ATTR_INT: *out = (float)it->v.i; return 0;
    case PA_ATTR_BOOL: *out = it->v.b ? 1.0f : 0.0f; return 0;
    default: return kind_mismatch(op, it, "a float");
    }
}

int pa_attr_get_bool(const char *op, const aclopAttr *attr, const char *name, bool *out, bool *found) {
    const pa_attr *it = find(attr, name);
    *found = it != NULL;
    if (it == NULL) return 0;
    if (it->kind != PA_ATTR_BOOL) return kind_mismatch(op, it, "a bool");
    *out = it->v.b;
    return 0;
}

int pa_attr_get_int(const char *op, const aclopAttr *attr, const char *name, int64_t *out, bool *found) {
    const pa_attr *it = find(attr, name);
    *found = it != NULL;
    if (it == NULL) return 0;
    if (it->kind == PA_ATTR_BOOL) {
        *out = it->v.b;
        return 0;
    }
    if (it->kind != PA_ATTR_INT) return kind_mismatch(op, it, "an int");
    *out = it->v.i;
    return 0;
}

int pa_attr_get_data_type(const char *op, const aclopAttr *attr, const char *name, aclDataType *out,
                          bool *found) {
    const pa_attr *it = find(attr, name);
    *found = it != NULL;
    if (it == NULL) return 0;
    if (it->kind == PA_ATTR_INT) {
        *out = (aclDataType)it->v.i;
        return 0;
    }
    if (it->kind != PA_ATTR_DATA_TYPE) return kind_mismatch(op, it, "a data type");
    *out = it->v.dt;
    return 0;
}

int pa_attr_check_names(const char *op, const aclopAttr *attr, const char *const *names, int n) {
    if (attr == NULL) return 0;
    for (size_t i = 0; i < attr->n; i++) {
        bool known = false;
        for (int j = 0; j < n && !known; j++) known = strcmp(attr->items[i].name, names[j]) == 0;
        if (!known) {
            return pa_rt_fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                              "aclopCompileAndExecute: op %s has no attribute named %s", op, attr->items[i].name);
        }
    }
    return 0;
}
