/*
 * nvtx.h - the NVTX v3 tool interface, as the shim implements it: the
 * export tables a program's NVTX loader hands an injection library, the
 * event attributes its calls carry, and the memory extension's
 * descriptors. Laid out as NVIDIA's headers lay them out
 * (/usr/local/cuda/include/nvtx3: nvtxDetail/nvtxTypes.h,
 * nvtxDetail/nvtxExtTypes.h, nvToolsExt.h, nvToolsExtMem.h), which the shim
 * does not include: they define the NVTX API itself, which is the
 * program's. tests/progs/nvtx/drv_nvtx.c, built against NVIDIA's headers,
 * drives the shim through them (tests/integration/test_nvtx.py): where the
 * two disagreed, its figures would not hold.
 *
 * Included by: shim/hooks/nvtx.c, shim/hooks/nvtx_mem.c.
 */
#ifndef GPUSHIM_SHIM_NVTX_H
#define GPUSHIM_SHIM_NVTX_H

#include <stddef.h>
#include <stdint.h>

/* ---- the core (nvtxDetail/nvtxTypes.h) ---- */
typedef void (*gs_nvtx_fn)(void); /* a slot's function, cast to its own type */
typedef const void *(*gs_nvtx_export_table_fn)(uint32_t id);

enum { GS_NVTX_ETID_CALLBACKS = 1, GS_NVTX_ETID_VERSIONINFO = 3 };
enum { GS_NVTX_MODULE_CORE = 1, GS_NVTX_MODULE_CORE2 = 5 };

struct gs_nvtx_callbacks_table {
    size_t struct_size;
    /* *out_table: pointers to the module's function slots, by callback id;
     * *out_size: the ids it has (slots 1 .. out_size - 1) */
    int (*get_module_function_table)(int module, gs_nvtx_fn ***out_table, unsigned *out_size);
};
struct gs_nvtx_version_table {
    size_t struct_size;
    uint32_t version;
    uint32_t reserved0;
    void (*set_injection_version)(uint32_t version);
};

/* NVTX_CB_MODULE_CORE's callback ids */
enum {
    GS_NVTX_CORE_MarkEx = 1,
    GS_NVTX_CORE_MarkA = 2,
    GS_NVTX_CORE_MarkW = 3,
    GS_NVTX_CORE_RangeStartEx = 4,
    GS_NVTX_CORE_RangeStartA = 5,
    GS_NVTX_CORE_RangeStartW = 6,
    GS_NVTX_CORE_RangeEnd = 7,
    GS_NVTX_CORE_RangePushEx = 8,
    GS_NVTX_CORE_RangePushA = 9,
    GS_NVTX_CORE_RangePushW = 10,
    GS_NVTX_CORE_RangePop = 11,
};
/* NVTX_CB_MODULE_CORE2's callback ids (the domain calls) */
enum {
    GS_NVTX_CORE2_DomainMarkEx = 1,
    GS_NVTX_CORE2_DomainRangeStartEx = 2,
    GS_NVTX_CORE2_DomainRangeEnd = 3,
    GS_NVTX_CORE2_DomainRangePushEx = 4,
    GS_NVTX_CORE2_DomainRangePop = 5,
    GS_NVTX_CORE2_DomainRegisterStringA = 10,
    GS_NVTX_CORE2_DomainRegisterStringW = 11,
    GS_NVTX_CORE2_DomainCreateA = 12,
    GS_NVTX_CORE2_DomainCreateW = 13,
};

/* nvtxEventAttributes_v2 (nvToolsExt.h): only its message is read */
enum {
    GS_NVTX_MESSAGE_ASCII = 1,
    GS_NVTX_MESSAGE_UNICODE = 2,
    GS_NVTX_MESSAGE_REGISTERED = 3,
};
struct gs_nvtx_attributes {
    uint16_t version;
    uint16_t size; /* of the struct the program filled in */
    uint32_t category;
    int32_t color_type;
    uint32_t color;
    int32_t payload_type;
    int32_t reserved0;
    uint64_t payload;
    int32_t message_type;
    const void *message; /* char *, wchar_t * or a registered string's handle */
};

/* ---- extensions (nvtxDetail/nvtxExtTypes.h) ---- */
struct gs_nvtx_ext_segment {
    size_t id;
    size_t slot_count;
    intptr_t *slots; /* by callback id */
};
struct gs_nvtx_ext_module {
    uint16_t nvtx_version;
    uint16_t struct_size;
    uint16_t module_id;
    uint16_t compat_id;
    size_t nsegments;
    struct gs_nvtx_ext_segment *segments;
    const void *get_export_function;
    const void *ext_info;
};

/* ---- the memory extension (nvToolsExtMem.h) ---- */
#define GS_NVTX_EXT_MODULE_MEM 1
#define GS_NVTX_EXT_COMPAT_MEM 0x0102
#define GS_NVTX_MEM_TYPE_VIRTUAL_ADDRESS 0x1
#define GS_NVTX_MEM_REF_POINTER 0x1
#define GS_NVTX_MEM_REF_HANDLE 0x2
enum {
    GS_NVTX_MEM_HeapRegister = 0,
    GS_NVTX_MEM_HeapUnregister = 1,
    GS_NVTX_MEM_HeapReset = 2,
    GS_NVTX_MEM_RegionsRegister = 3,
    GS_NVTX_MEM_RegionsResize = 4,
    GS_NVTX_MEM_RegionsUnregister = 5,
};
struct gs_nvtx_mem_range { /* nvtxMemVirtualRangeDesc_v1 */
    size_t size;
    const void *ptr;
};
struct gs_nvtx_mem_heap_desc { /* nvtxMemHeapDesc_v1 */
    uint16_t compat_id;
    uint16_t struct_size;
    uint32_t reserved0;
    uint32_t usage;
    uint32_t type;
    size_t type_desc_size;
    const void *type_desc; /* a struct gs_nvtx_mem_range for VIRTUAL_ADDRESS */
    uint32_t category;
    uint32_t message_type;
    const void *message;
};
struct gs_nvtx_mem_regions { /* nvtxMemRegionsRegisterBatch_v1 */
    uint16_t compat_id;
    uint16_t struct_size;
    uint32_t region_type;
    const void *heap;
    size_t count;
    size_t elem_size;
    const void *elems;
    const void **handles_out; /* may be NULL */
};
struct gs_nvtx_mem_resize { /* nvtxMemRegionsResizeBatch_v1 */
    uint16_t compat_id;
    uint16_t struct_size;
    uint32_t region_type;
    size_t count;
    size_t elem_size;
    const void *elems;
};
struct gs_nvtx_mem_unregister { /* nvtxMemRegionsUnregisterBatch_v1 */
    uint16_t compat_id;
    uint16_t struct_size;
    uint32_t ref_type;
    size_t count;
    size_t elem_size;
    const void *refs; /* a pointer or a handle each (the handles are the pointers) */
};

#endif
