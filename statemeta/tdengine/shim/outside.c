/* The rest of TDengine that the compiled stream files call: other stream files (dispatch, exec,
 * queue, backend), the executor, the wal and the message codecs. Each is the least the meta's
 * paths need, written for statemeta from what the callers expect; what the meta never reaches
 * stops the process naming itself (shimUnmodelled), so a run can never pass through it unseen. */
#include "shim.h"
#include "streamInt.h"
#include "tmsg.h"

/* -- task ids, epsets --------------------------------------------------------------------- */
char* createStreamTaskIdStr(int64_t streamId, int32_t taskId) {
  char buf[128];
  snprintf(buf, sizeof(buf), "0x%" PRIx64 "-0x%x", (uint64_t)streamId, (uint32_t)taskId);
  return strdup(buf);
}

static int32_t nextId = 0;
int32_t tGenIdPI32(void) { return __atomic_add_fetch(&nextId, 1, __ATOMIC_SEQ_CST); }
int64_t tGenIdPI64(void) { return tGenIdPI32(); }

void epsetAssign(SEpSet* pDst, const SEpSet* pSrc) { *pDst = *pSrc; }
bool isEpsetEqual(const SEpSet* s1, const SEpSet* s2) { return memcmp(s1, s2, sizeof(SEpSet)) == 0; }
void epsetToStr(const SEpSet* pEpSet, char* pBuf, int32_t len) {
  snprintf(pBuf, (size_t)len, "epset:{inUse:%d,n:%d}", pEpSet->inUse, pEpSet->numOfEps);
}
void initRpcMsg(SRpcMsg* pMsg, int32_t msgType, void* pCont, int32_t contLen) {
  pMsg->msgType = msgType;
  pMsg->pCont = pCont;
  pMsg->contLen = contLen;
}

/* An epset on the wire: inUse, the count, then each endpoint's fqdn and port. */
int32_t tEncodeSEpSet(SEncoder* pEncoder, const SEpSet* pEp) {
  if (tEncodeI8(pEncoder, pEp->inUse) < 0 || tEncodeI8(pEncoder, pEp->numOfEps) < 0) return -1;
  for (int32_t i = 0; i < pEp->numOfEps; ++i) {
    if (tEncodeCStr(pEncoder, pEp->eps[i].fqdn) < 0 || tEncodeU16(pEncoder, pEp->eps[i].port) < 0) return -1;
  }
  return 0;
}
int32_t tDecodeSEpSet(SDecoder* pDecoder, SEpSet* pEp) {
  if (tDecodeI8(pDecoder, &pEp->inUse) < 0 || tDecodeI8(pDecoder, &pEp->numOfEps) < 0) return -1;
  if (pEp->numOfEps < 0 || pEp->numOfEps > TSDB_MAX_REPLICA) return -1;
  for (int32_t i = 0; i < pEp->numOfEps; ++i) {
    if (tDecodeCStrTo(pDecoder, pEp->eps[i].fqdn) < 0 || tDecodeU16(pDecoder, &pEp->eps[i].port) < 0) return -1;
  }
  return 0;
}

/* Shuffle db info is not among the tasks the harness registers. */
/* A table task's schema: the harness's have no columns, so the count and the version. */
int32_t tEncodeSSchemaWrapper(SEncoder* pEncoder, const SSchemaWrapper* pSW) {
  if (pSW->nCols != 0) shimUnmodelled("tEncodeSSchemaWrapper of columns");
  if (tEncodeI32v(pEncoder, pSW->nCols) < 0 || tEncodeI32v(pEncoder, pSW->version) < 0) return -1;
  return 0;
}
int32_t tDecodeSSchemaWrapper(SDecoder* pDecoder, SSchemaWrapper* pSW) {
  if (tDecodeI32v(pDecoder, &pSW->nCols) < 0 || tDecodeI32v(pDecoder, &pSW->version) < 0) return -1;
  return pSW->nCols == 0 ? 0 : -1;
}
void tDeleteSchemaWrapper(SSchemaWrapper* p) {
  if (p != NULL) free(p->pSchema);
  free(p);
}
int32_t tSerializeSUseDbRspImp(SEncoder* pEncoder, const SUseDbRsp* pRsp) {
  (void)pEncoder, (void)pRsp;
  shimUnmodelled("tSerializeSUseDbRspImp");
  return -1;
}
int32_t tDeserializeSUseDbRspImp(SDecoder* pDecoder, SUseDbRsp* pRsp) {
  (void)pDecoder, (void)pRsp;
  return -1;
}
void tSimpleHashCleanup(SSHashObj* p) { (void)p; }

/* -- queues, state backends: empty, since the harness puts no data through a task -------- */
SStreamQueue* streamQueueOpen(int64_t cap) {
  (void)cap;
  return calloc(1, sizeof(SStreamQueue));
}
void streamQueueClose(SStreamQueue* pQueue, int32_t taskId) {
  (void)taskId;
  free(pQueue);
}
int32_t streamQueueGetItemSize(const SStreamQueue* pQueue) {
  (void)pQueue;
  return 0;
}
void* taosAllocateQitem(int32_t size, int32_t itype, int64_t dataSize) {
  (void)itype, (void)dataSize;
  return calloc(1, (size_t)size);
}
void taosFreeQitem(void* pItem) { free(pItem); }
int32_t streamTaskPutDataIntoInputQ(SStreamTask* pTask, SStreamQueueItem* pItem) {
  (void)pTask;
  free(((SStreamDataBlock*)pItem)->blocks);
  free(pItem);
  return 0;
}

void streamBackendCleanup(void* arg) { free(arg); }
void streamBackendHandleCleanup(void* arg) { free(arg); }
void taskDbDestroy2(void* arg) { free(arg); }
bool streamBackendDataIsExist(const char* path, int64_t chkpId, int32_t vgId) {
  (void)path, (void)chkpId, (void)vgId;
  return false;
}
void* streamBackendInit(const char* path, int64_t chkpId, int32_t vgId) {
  (void)path, (void)chkpId, (void)vgId;
  return calloc(1, sizeof(SBackendWrapper));
}
int32_t streamStateCvtDataFormat(char* path, char* key, void* cfInst) {
  (void)path, (void)key, (void)cfInst;
  return 0;
}
int32_t taskDbAddRef(void* pTaskDb) {
  (void)pTaskDb;
  return 0;
}
STaskDbWrapper* taskDbOpen(char* path, char* key, int64_t chkpId) {
  (void)path, (void)key, (void)chkpId;
  return calloc(1, sizeof(STaskDbWrapper));
}
int32_t taskDbRemoveRef(void* pTaskDb) {
  (void)pTaskDb;
  return 0;
}
void streamStateClose(SStreamState* pState, bool remove) { (void)pState, (void)remove; }
void* bkdMgtCreate(char* path) {
  (void)path;
  return calloc(1, 1);
}
void bkdMgtDestroy(void* bm) { free(bm); }
void taosRemoveDir(const char* dirname) { (void)dirname; }

/* -- the executor and the wal: a task the harness registers has none ---------------------- */
void qDestroyTask(void* tinfo) { (void)tinfo; }
int32_t qKillTask(void* tinfo, int32_t rspCode) {
  (void)tinfo, (void)rspCode;
  return 0;
}
int32_t qRestoreStreamOperatorOption(void* tinfo) {
  (void)tinfo;
  return 0;
}
int32_t qSetStreamOperatorOptionForScanHistory(void* tinfo) {
  (void)tinfo;
  return 0;
}
int32_t qStreamInfoResetTimewindowFilter(void* tinfo) {
  (void)tinfo;
  return 0;
}
int32_t qStreamRecoverFinish(void* tinfo) {
  (void)tinfo;
  return 0;
}
int32_t qStreamSourceScanParamForHistoryScanStep1(void* tinfo, SVersionRange* pVerRange, STimeWindow* pWindow) {
  (void)tinfo, (void)pVerRange, (void)pWindow;
  return 0;
}
int32_t qStreamSourceScanParamForHistoryScanStep2(void* tinfo, SVersionRange* pVerRange, STimeWindow* pWindow) {
  (void)tinfo, (void)pVerRange, (void)pWindow;
  return 0;
}
int64_t walReaderGetCurrentVer(const SWalReader* pReader) {
  (void)pReader;
  return -1;
}
void walCloseReader(SWalReader* pRead) { (void)pRead; }
void walReaderValidVersionRange(SWalReader* pReader, int64_t* sver, int64_t* ever) {
  (void)pReader;
  *sver = 0;
  *ever = 0;
}

/* -- the other stream files ----------------------------------------------------------------- */
int32_t streamTimerInit(void) {
  streamTimer = taosTmrInit(1000, 100, 10000, "STREAM");
  return 0;
}
void streamTimerCleanUp(void) {}

bool streamTaskShouldStop(const SStreamTask* pTask) {
  ETaskStatus s = streamTaskGetStatus(pTask)->state;
  return s == TASK_STATUS__STOP || s == TASK_STATUS__DROPPING;
}
bool streamTaskShouldPause(const SStreamTask* pTask) {
  return streamTaskGetStatus(pTask)->state == TASK_STATUS__PAUSE;
}
bool streamTaskIsIdle(const SStreamTask* pTask) {
  (void)pTask;
  return true;
}
int32_t streamSchedExec(SStreamTask* pTask) {
  (void)pTask;
  return 0;
}

/* A check of a downstream task: captured as a request carrying the check's fields. */
int32_t streamSendCheckMsg(SStreamTask* pTask, const SStreamTaskCheckReq* pReq, int32_t nodeId, SEpSet* pEpSet) {
  (void)pTask, (void)nodeId;
  void* cont = rpcMallocCont(sizeof(SStreamTaskCheckReq));
  memcpy(cont, pReq, sizeof(SStreamTaskCheckReq));
  SRpcMsg msg = {.msgType = TDMT_VND_STREAM_TASK_CHECK, .pCont = cont, .contLen = sizeof(SStreamTaskCheckReq)};
  return tmsgSendReq(pEpSet, &msg);
}

int32_t streamTaskInitTokenBucket(STokenBucket* pBucket, int32_t numCap, int32_t numRate, float quotaRate,
                                  const char* id) {
  (void)id;
  if (pBucket == NULL) return TSDB_CODE_INVALID_PARA;
  pBucket->numCapacity = numCap;
  pBucket->numOfToken = numCap;
  pBucket->numRate = numRate;
  pBucket->quotaRate = quotaRate;
  return 0;
}

void streamClearChkptReadyMsg(SStreamTask* pTask) { (void)pTask; }
void streamTaskSetCheckpointFailedId(SStreamTask* pTask) { (void)pTask; }
int32_t streamTaskSendCheckpointSourceRsp(SStreamTask* pTask) {
  (void)pTask;
  return 0;
}
void destroyDispatchMsg(SStreamDispatchReq* pReq, int32_t numOfVgroups) {
  (void)numOfVgroups;
  free(pReq);
}
int32_t getNumOfDispatchBranch(SStreamTask* pTask) {
  (void)pTask;
  return 0;
}
SStreamChildEpInfo* streamTaskGetUpstreamTaskEpInfo(SStreamTask* pTask, int32_t taskId) {
  for (size_t i = 0; i < taosArrayGetSize(pTask->upstreamInfo.pList); ++i) {
    SStreamChildEpInfo* p = taosArrayGetP(pTask->upstreamInfo.pList, i);
    if (p->taskId == taskId) return p;
  }
  return NULL;
}

int32_t streamAddEndScanHistoryMsg(SStreamTask* pTask, SRpcHandleInfo* pRpcInfo, SStreamScanHistoryFinishReq* pReq) {
  (void)pTask, (void)pRpcInfo, (void)pReq;
  shimUnmodelled("streamAddEndScanHistoryMsg");
  return -1;
}
int32_t streamDispatchScanHistoryFinishMsg(SStreamTask* pTask) {
  (void)pTask;
  shimUnmodelled("streamDispatchScanHistoryFinishMsg");
  return -1;
}
int32_t streamNotifyUpstreamContinue(SStreamTask* pTask) {
  (void)pTask;
  shimUnmodelled("streamNotifyUpstreamContinue");
  return -1;
}
int32_t streamTaskBuildScanhistoryRspMsg(SStreamTask* pTask, SStreamScanHistoryFinishReq* pReq, void** pBuffer,
                                         int32_t* pLen) {
  (void)pTask, (void)pReq, (void)pBuffer, (void)pLen;
  shimUnmodelled("streamTaskBuildScanhistoryRspMsg");
  return -1;
}
