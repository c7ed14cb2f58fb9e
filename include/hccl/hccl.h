/* HCCL collective and point-to-point operations (libhccl.so). Every call
 * checks its arguments and queues the operation on `stream` (of the
 * communicator's device), then returns: the work is ordered with the other
 * tasks of that stream, and aclrtSynchronizeStream reports its failures.
 * Includes hccl_types.h, hccl_comm.h and acl/acl.h, as CANN's does. Works from
 * C and C++.
 *
 * Reductions (SUM, PROD, MAX, MIN) take int8, int16, int32, int64, uint64,
 * fp16, fp32, fp64 and bf16 (PROD: not int16 and bf16), and fold the ranks'
 * values in rank order (rank 0 first), so every rank gets the same bits in
 * every run. Data movement takes every type except int128. */
#ifndef HCCL_H_
#define HCCL_H_

#include "acl/acl.h"
#include "hccl/hccl_comm.h"
#include "hccl/hccl_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* recvBuf[i] = sendBuf_0[i] op ... op sendBuf_{n-1}[i], count elements, on every rank. */
extern HcclResult HcclAllReduce(void *sendBuf, void *recvBuf, uint64_t count, HcclDataType dataType,
                                HcclReduceOp op, HcclComm comm, aclrtStream stream);
/* buf of `root` to every rank. */
extern HcclResult HcclBroadcast(void *buf, uint64_t count, HcclDataType dataType, uint32_t root, HcclComm comm,
                                aclrtStream stream);
/* Rank r gets block r (recvCount elements) of the reduction of every rank's sendBuf. */
extern HcclResult HcclReduceScatter(void *sendBuf, void *recvBuf, uint64_t recvCount, HcclDataType dataType,
                                    HcclReduceOp op, HcclComm comm, aclrtStream stream);
/* As HcclReduceScatter with per-rank blocks: rank r gets sendCounts[r] elements
 * from offset sendDispls[r] (uint64_t arrays of rank-size entries). */
extern HcclResult HcclReduceScatterV(void *sendBuf, const void *sendCounts, const void *sendDispls, void *recvBuf,
                                     uint64_t recvCount, HcclDataType dataType, HcclReduceOp op, HcclComm comm,
                                     aclrtStream stream);
/* Block r (recvCount elements) of root's sendBuf to rank r. */
extern HcclResult HcclScatter(void *sendBuf, void *recvBuf, uint64_t recvCount, HcclDataType dataType,
                              uint32_t root, HcclComm comm, aclrtStream stream);
/* recvBuf = every rank's sendBuf (sendCount elements each), in rank order. */
extern HcclResult HcclAllGather(void *sendBuf, void *recvBuf, uint64_t sendCount, HcclDataType dataType,
                                HcclComm comm, aclrtStream stream);
/* Rank r's sendBuf goes to recvBuf + recvDispls[r] (recvCounts[r] elements; uint64_t arrays). */
extern HcclResult HcclAllGatherV(void *sendBuf, uint64_t sendCount, void *recvBuf, const void *recvCounts,
                                 const void *recvDispls, HcclDataType dataType, HcclComm comm, aclrtStream stream);
/* The reduction of every rank's sendBuf into root's recvBuf. */
extern HcclResult HcclReduce(void *sendBuf, void *recvBuf, uint64_t count, HcclDataType dataType, HcclReduceOp op,
                             uint32_t root, HcclComm comm, aclrtStream stream);
/* Block j of sendBuf (sendCount elements) to rank j, block i of recvBuf from rank i. */
extern HcclResult HcclAlltoAll(const void *sendBuf, uint64_t sendCount, HcclDataType sendType, const void *recvBuf,
                               uint64_t recvCount, HcclDataType recvType, HcclComm comm, aclrtStream stream);
/* Per-peer counts and displacements (in elements; uint64_t arrays of rank-size entries). */
extern HcclResult HcclAlltoAllV(const void *sendBuf, const void *sendCounts, const void *sdispls,
                                HcclDataType sendType, const void *recvBuf, const void *recvCounts,
                                const void *rdispls, HcclDataType recvType, HcclComm comm, aclrtStream stream);
/* sendCountMatrix[i * rankSize + j] (uint64_t): elements rank i sends to rank j; blocks are packed in rank order. */
extern HcclResult HcclAlltoAllVC(const void *sendBuf, const void *sendCountMatrix, HcclDataType sendType,
                                 const void *recvBuf, HcclDataType recvType, HcclComm comm, aclrtStream stream);
/* Paired: the send to destRank completes with that rank's HcclRecv from this one. */
extern HcclResult HcclSend(void *sendBuf, uint64_t count, HcclDataType dataType, uint32_t destRank, HcclComm comm,
                           aclrtStream stream);
extern HcclResult HcclRecv(void *recvBuf, uint64_t count, HcclDataType dataType, uint32_t srcRank, HcclComm comm,
                           aclrtStream stream);
/* Every send and receive of the array at once (in any order across ranks). */
extern HcclResult HcclBatchSendRecv(HcclSendRecvItem *sendRecvInfo, uint32_t itemNum, HcclComm comm,
                                    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* HCCL_H_ */
