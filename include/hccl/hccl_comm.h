/* HCCL communicators: creation (root info, rank table, all devices of one
 * process), queries, barrier, destruction, errors, configuration and groups.
 * In CANN this part lives in libhcomm.so; pyaclnn's libhccl.so and libhcomm.so
 * both provide it. Works from C and C++. */
#ifndef HCCL_COMM_H_
#define HCCL_COMM_H_

#include <stddef.h>
#include <stdint.h>

#include "acl/acl.h"
#include "hccl/hccl_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A root info for the communicator rank 0 of which runs in this process:
 * every rank passes the same bytes to HcclCommInitRootInfo. */
extern HcclResult HcclGetRootInfo(HcclRootInfo *rootInfo);
/* Joins the communicator of `rootInfo` as `rank` of `nRanks` on the current
 * device; returns once every rank has joined (HCCL_CONNECT_TIMEOUT seconds). */
extern HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank,
                                       HcclComm *comm);
extern HcclResult HcclCommInitRootInfoConfig(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank,
                                             const HcclCommConfig *config, HcclComm *comm);
/* From a rank table file (JSON). */
extern HcclResult HcclCommInitClusterInfo(const char *clusterInfo, uint32_t rank, HcclComm *comm);
extern HcclResult HcclCommInitClusterInfoConfig(const char *clusterInfo, uint32_t rank, HcclCommConfig *config,
                                                HcclComm *comm);
/* One communicator per device of `devices`, all in this process; comms[i] is rank i. */
extern HcclResult HcclCommInitAll(uint32_t ndev, int32_t *devices, HcclComm *comms);
extern HcclResult HcclCreateSubCommConfig(HcclComm *comm, uint32_t rankNum, uint32_t *rankIds, uint64_t subCommId,
                                          uint32_t subCommRankId, HcclCommConfig *config, HcclComm *subComm);

extern HcclResult HcclGetRankSize(HcclComm comm, uint32_t *rankSize);
extern HcclResult HcclGetRankId(HcclComm comm, uint32_t *rank);
/* commName: at least COMM_NAME_MAX_LENGTH bytes. */
extern HcclResult HcclGetCommName(HcclComm comm, char *commName);
extern HcclResult HcclCommGetHandleWithName(const char *commName, HcclComm *comm);
/* Queued on `stream`: completes when every rank reached it. */
extern HcclResult HcclBarrier(HcclComm comm, aclrtStream stream);
extern HcclResult HcclCommDestroy(HcclComm comm);

/* The first failure of the communicator's queued work (HCCL_SUCCESS if none). */
extern HcclResult HcclGetCommAsyncError(HcclComm comm, HcclResult *asyncError);
extern const char *HcclGetErrorString(HcclResult code);

extern HcclResult HcclSetConfig(HcclConfig config, HcclConfigValue configValue);
extern HcclResult HcclGetConfig(HcclConfig config, HcclConfigValue *configValue);
/* Bit i set: the HcclCommConfigCapability i is understood. */
extern uint32_t HcclGetCommConfigCapability(void);

/* Fills `config` with "not set" values and its version header (inline, as in
 * CANN: not a library symbol; the generated cffi declarations leave it out). */
#ifndef PYACLNN_CDEF
#ifdef __cplusplus
inline
#else
static inline
#endif
void HcclCommConfigInit(HcclCommConfig *config)
{
    typedef struct {
        size_t size;
        uint32_t magicWord;
        uint32_t version;
        uint64_t reserved;
    } configInfo_t;
    if (config == 0) return;
    configInfo_t *info = (configInfo_t *)(void *)config;
    info->size = sizeof(HcclCommConfig);
    info->magicWord = HCCL_COMM_CONFIG_MAGIC_WORD;
    info->version = HCCL_COMM_CONFIG_VERSION;
    info->reserved = 0;
    config->hcclBufferSize = HCCL_COMM_BUFFSIZE_CONFIG_NOT_SET;
    config->hcclDeterministic = HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET;
    config->hcclCommName[0] = '\0';
    config->hcclUdi[0] = '\0';
    config->hcclOpExpansionMode = HCCL_COMM_DEFAULT_OP_EXPANSION_MODE;
    config->hcclRdmaTrafficClass = HCCL_COMM_TRAFFIC_CLASS_CONFIG_NOT_SET;
    config->hcclRdmaServiceLevel = HCCL_COMM_SERVICE_LEVEL_CONFIG_NOT_SET;
    config->hcclWorldRankID = 0;
    config->hcclJobID = 0;
    config->aclGraphZeroCopyEnable = 0;
    config->hcclExecTimeOut = HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET;
    config->hcclAlgo[0] = '\0';
    config->hcclRetryEnable[0] = '\0';
    config->hcclRetryParams[0] = '\0';
    config->hcclBufferName[0] = '\0';
    config->hcclQos = HCCL_COMM_QOS_CONFIG_NOT_SET;
    config->hcclSymWinMaxMemSizePerRank = HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE;
}
#endif

/* Calls between HcclGroupStart and HcclGroupEnd on this thread are queued when
 * HcclGroupEnd runs; the sends and receives among them run as one batch, so
 * paired sends and receives of one thread cannot deadlock. */
extern HcclResult HcclGroupStart(void);
extern HcclResult HcclGroupEnd(void);

#ifdef __cplusplus
}
#endif

#endif /* HCCL_COMM_H_ */
