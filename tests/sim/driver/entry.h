/*
 * entry.h - the driver's entry points that getproc.c's table names and gpushim_cuda.h's
 * lists do not (sim.h declares those), by the file that defines each: sim_ + the exported
 * name, and the newer ABIs cuGetProcAddress alone hands out (context.c's ctx_*_v2).
 *
 * Included by: getproc.c, and each file that defines one of them (so that the compiler
 * checks the definition against its declaration here), after sim.h.
 */
#ifndef GS_SIM_ENTRY_H
#define GS_SIM_ENTRY_H

#include "tests/sim/driver/sim.h"

struct sim_access_desc; /* vmm.h */

#pragma GCC visibility push(hidden)

/* ---- init.c ---- */
gs_curesult sim_cuInit(unsigned int Flags);
gs_curesult sim_cuDriverGetVersion(int *driverVersion);
gs_curesult sim_cuGetErrorString(gs_curesult error, const char **pStr);
gs_curesult sim_cuGetErrorName(gs_curesult error, const char **pStr);

/* ---- device.c ---- */
gs_curesult sim_cuDeviceGetCount(int *count);
gs_curesult sim_cuDeviceGet(gs_cudevice *device, int ordinal);
gs_curesult sim_cuDeviceGetAttribute(int *pi, int attrib, gs_cudevice dev);
gs_curesult sim_cuDeviceGetName(char *name, int len, gs_cudevice dev);
gs_curesult sim_cuDeviceTotalMem_v2(size_t *bytes, gs_cudevice dev);
gs_curesult sim_cuDeviceSetMemPool(gs_cudevice dev, gs_cumempool pool);

/* ---- context.c ---- */
gs_curesult sim_cuDevicePrimaryCtxRelease_v2(gs_cudevice dev);
gs_curesult ctx_get_device_v2(gs_cudevice *device, gs_cucontext ctx);
gs_curesult ctx_synchronize_v2(gs_cucontext ctx);

/* ---- stream.c ---- */
gs_curesult sim_cuStreamDestroy_v2(gs_custream hStream);
gs_curesult sim_cuStreamSynchronize(gs_custream hStream);
gs_curesult sim_cuStreamSynchronize_ptsz(gs_custream hStream);
gs_curesult sim_cuStreamGetDevice_ptsz(gs_custream hStream, gs_cudevice *device);
gs_curesult sim_cuStreamGetCtx(gs_custream hStream, gs_cucontext *pctx);
gs_curesult sim_cuStreamGetCtx_ptsz(gs_custream hStream, gs_cucontext *pctx);
gs_curesult sim_cuStreamGetCtx_v2(gs_custream hStream, gs_cucontext *pctx,
                                  void **pGreenCtx);
gs_curesult sim_cuStreamGetCtx_v2_ptsz(gs_custream hStream, gs_cucontext *pctx,
                                       void **pGreenCtx);

/* ---- event.c ---- */
gs_curesult sim_cuEventRecord_ptsz(gs_cuevent hEvent, gs_custream hStream);
gs_curesult sim_cuStreamWaitEvent_ptsz(gs_custream hStream, gs_cuevent hEvent,
                                       unsigned int Flags);
gs_curesult sim_cuEventSynchronize(gs_cuevent hEvent);
gs_curesult sim_cuEventQuery(gs_cuevent hEvent);

/* ---- vmm.c ---- */
gs_curesult sim_cuMemGetAllocationGranularity(size_t *granularity,
                                              const gs_cumemallocationprop *prop,
                                              int option);
gs_curesult sim_cuMemExportToShareableHandle(void *shareableHandle, gs_cumemhandle handle,
                                             gs_cumemhandletype handleType,
                                             unsigned long long flags);
gs_curesult sim_cuMemGetAllocationPropertiesFromHandle(gs_cumemallocationprop *prop,
                                                       gs_cumemhandle handle);
gs_curesult sim_cuMemSetAccess(gs_cudeviceptr ptr, size_t size,
                               const struct sim_access_desc *desc, size_t count);

/* ---- multicast.c ---- */
gs_curesult sim_cuMulticastGetGranularity(size_t *granularity,
                                          const gs_cumulticastobjectprop *prop, int option);
gs_curesult sim_cuMulticastAddDevice(gs_cumemhandle mcHandle, gs_cudevice dev);
gs_curesult sim_cuMulticastBindMem(gs_cumemhandle mcHandle, size_t mcOffset,
                                   gs_cumemhandle memHandle, size_t memOffset, size_t size,
                                   unsigned long long flags);
gs_curesult sim_cuMulticastBindAddr(gs_cumemhandle mcHandle, size_t mcOffset,
                                    gs_cudeviceptr memptr, size_t size,
                                    unsigned long long flags);
gs_curesult sim_cuMulticastUnbind(gs_cumemhandle mcHandle, gs_cudevice dev,
                                  size_t mcOffset, size_t size);

/* ---- host.c ---- */
gs_curesult sim_cuMemHostGetDevicePointer_v2(gs_cudeviceptr *pdptr, void *p,
                                             unsigned int Flags);

/* ---- ipc.c ---- */
gs_curesult sim_cuIpcGetMemHandle(gs_cuipcmemhandle *pHandle, gs_cudeviceptr dptr);

/* ---- pointer.c ---- */
gs_curesult sim_cuPointerGetAttribute(void *data, int attribute, gs_cudeviceptr ptr);

/* ---- graph.c ---- */
gs_curesult sim_cuGraphCreate(gs_cugraph *phGraph, unsigned int flags);

/* ---- graphmem.c ---- */
gs_curesult sim_cuDeviceSetGraphMemAttribute(gs_cudevice device, gs_cugraphmemattr attr,
                                             void *value);

/* ---- capture.c ---- */
gs_curesult sim_cuStreamIsCapturing_ptsz(gs_custream hStream,
                                         gs_custreamcapturestatus *captureStatus);
gs_curesult sim_cuThreadExchangeStreamCaptureMode(gs_custreamcapturemode *mode);

#pragma GCC visibility pop

#endif
