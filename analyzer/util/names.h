/*
 * names.h - the names of the trace's numbers: hooked APIs, kinds of
 * memory, CUresults (names.c).
 *
 * Included by: any analyzer or model file that prints them.
 */
#ifndef GPUSHIM_UTIL_NAMES_H
#define GPUSHIM_UTIL_NAMES_H

#include <stdint.h>

const char *gs_api_name(uint32_t api);     /* "cuMemAlloc_v2"; "unknown" */
const char *gs_kind_name(uint32_t kind);   /* "device", "host_pinned"; "?" */
const char *gs_kind_label(uint32_t kind);  /* "pinned host memory", as screens say it */
const char *gs_result_name(uint32_t result); /* "CUDA_ERROR_OUT_OF_MEMORY" */

#endif
