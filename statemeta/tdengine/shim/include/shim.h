/* statemeta's stand-in for everything TDengine's stream files include from outside the
 * compiled set: the types they name and the functions they call, declared here and defined by
 * the project's own shim (the .c files beside include/). Written for statemeta; no TDengine code. */
#ifndef STATEMETA_SHIM_H
#define STATEMETA_SHIM_H

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -- memory, errors, time --------------------------------------------------------------- */
#define taosMemoryMalloc(s) malloc(s)
#define taosMemoryCalloc(n, s) calloc((n), (s))
#define taosMemoryRealloc(p, s) realloc((p), (s))
#define taosMemoryFree(p) free(p)
#define taosMemoryFreeClear(p) do { free(p); (p) = NULL; } while (0)
#define taosStrdup(s) strdup(s)
#define tstrerror(c) shimErrorText(c)
#define TAOS_DEF_ERROR_CODE(mod, code) ((int32_t)((0x80000000 | ((mod) << 16) | (code))))
#define TSDB_CODE_SUCCESS 0
#define TSDB_CODE_FAILED -1
#define TSDB_CODE_OUT_OF_MEMORY TAOS_DEF_ERROR_CODE(0, 0x0102)
#define TSDB_CODE_INVALID_MSG TAOS_DEF_ERROR_CODE(0, 0x010B)
#define TSDB_CODE_INVALID_PARA TAOS_DEF_ERROR_CODE(0, 0x0118)
#define TSDB_CODE_DUP_KEY TAOS_DEF_ERROR_CODE(0, 0x0027)
#define TSDB_CODE_STREAM_TASK_NOT_EXIST TAOS_DEF_ERROR_CODE(0, 0x4100)
#define TSDB_CODE_STREAM_EXEC_CANCELLED TAOS_DEF_ERROR_CODE(0, 0x4102)
#define TSDB_CODE_STREAM_INVALID_STATETRANS TAOS_DEF_ERROR_CODE(0, 0x4103)
#define TSDB_CODE_STREAM_TASK_IVLD_STATUS TAOS_DEF_ERROR_CODE(0, 0x4104)
#define TSDB_CODE_INVALID_TIMESTAMP TAOS_DEF_ERROR_CODE(0, 0x060B)
#define TSDB_CODE_INVALID_CFG TAOS_DEF_ERROR_CODE(0, 0x0118)
extern __thread int32_t terrno;
const char* shimErrorText(int32_t code);
int64_t taosGetTimestampMs(void);
int64_t taosGetTimestampUs(void);
#define TSDB_TABLE_FNAME_LEN 193
#define TSDB_FILENAME_LEN 128
#define TSDB_DB_FNAME_LEN 65
#define TSDB_MAX_REPLICA 5
#define TSDB_FQDN_LEN 128
#define TSDB_CODE_APP_ERROR -1
#define TD_DIRSEP "/"
#define tListLen(x) (sizeof(x) / sizeof((x)[0]))
#define TMAX(a, b) (((a) > (b)) ? (a) : (b))
#define TMIN(a, b) (((a) < (b)) ? (a) : (b))
#define POINTER_BYTES sizeof(void*)
#define TD_CODE_ERR 0
#define UNUSED(x) (void)(x)
#define UNUSED_PARAM(x) _UNUSED##x __attribute__((unused))
#define ASSERT(x) do { if (!(x)) shimAssertFailed(#x, __FILE__, __LINE__); } while (0)
#define ASSERTS(x, ...) ASSERT(x)
void shimAssertFailed(const char* what, const char* file, int line);
void shimUnmodelled(const char* name);
#define T_LONG_JMP(a, b) abort()
#define TD_PATH_MAX 4096
#define PATH_MAX_LEN 4096
#define TSKEY int64_t
#define FORCE_INLINE inline __attribute__((always_inline))
#define POINTER_SHIFT(p, b) ((void*)((char*)(p) + (b)))
#define IS_LITTLE_ENDIAN() (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
#define INT64_MAX_LEN 21
#define VARSTR_HEADER_SIZE sizeof(uint16_t)

/* -- threads, latches ------------------------------------------------------------------- */
typedef pthread_mutex_t TdThreadMutex;
typedef pthread_rwlock_t TdThreadRwlock;
typedef pthread_t TdThread;
typedef pthread_once_t TdThreadOnce;
#define taosThreadOnce(o, f) pthread_once((o), (f))
#define PTHREAD_ONCE_INIT_SHIM PTHREAD_ONCE_INIT
typedef int32_t SRWLatch;
#define taosThreadMutexInit(m, a) pthread_mutex_init((m), (a))
#define taosThreadMutexDestroy(m) pthread_mutex_destroy(m)
#define taosThreadMutexLock(m) pthread_mutex_lock(m)
#define taosThreadMutexUnlock(m) pthread_mutex_unlock(m)
#define taosThreadRwlockInit(l, a) pthread_rwlock_init((l), (a))
#define taosThreadRwlockDestroy(l) pthread_rwlock_destroy(l)
#define taosThreadRwlockRdlock(l) pthread_rwlock_rdlock(l)
#define taosThreadRwlockWrlock(l) pthread_rwlock_wrlock(l)
#define taosThreadRwlockUnlock(l) pthread_rwlock_unlock(l)
void taosInitRWLatch(SRWLatch* p);
void taosWLockLatch(SRWLatch* p);
void taosWUnLockLatch(SRWLatch* p);
void taosRLockLatch(SRWLatch* p);
void taosRUnLockLatch(SRWLatch* p);
#define atomic_add_fetch_32(p, v) __atomic_add_fetch((p), (v), __ATOMIC_SEQ_CST)
#define atomic_sub_fetch_32(p, v) __atomic_sub_fetch((p), (v), __ATOMIC_SEQ_CST)
#define atomic_fetch_add_32(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define atomic_fetch_sub_32(p, v) __atomic_fetch_sub((p), (v), __ATOMIC_SEQ_CST)
#define atomic_add_fetch_64(p, v) __atomic_add_fetch((p), (v), __ATOMIC_SEQ_CST)
#define atomic_load_8(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define atomic_load_32(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define atomic_load_64(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define atomic_store_8(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define atomic_store_32(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define atomic_store_64(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define atomic_val_compare_exchange_8(p, c, v) __sync_val_compare_and_swap((p), (c), (v))
#define atomic_val_compare_exchange_32(p, c, v) __sync_val_compare_and_swap((p), (c), (v))
#define atomic_exchange_8(p, v) __atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)
#define atomic_exchange_32(p, v) __atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)
#define atomic_exchange_64(p, v) __atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)
#define taosMsleep(ms) shimSleepMs(ms)
void shimSleepMs(int32_t ms);
void shimOnWait(void); /* the driver: the calling thread waits in a loop of the C */

/* -- logging ---------------------------------------------------------------------------- */
#define DEBUG_FATAL 1U
#define DEBUG_ERROR DEBUG_FATAL
#define DEBUG_WARN 2U
#define DEBUG_INFO DEBUG_WARN
#define DEBUG_DEBUG 4U
#define DEBUG_TRACE 8U
extern int32_t stDebugFlag;
extern int32_t tqDebugFlag;
extern int32_t uDebugFlag;
void taosPrintLog(const char* flags, int32_t level, int32_t dflag, const char* format, ...);
#define uError(...) taosPrintLog("UTL ERROR ", DEBUG_ERROR, 255, __VA_ARGS__)
#define uDebug(...) taosPrintLog("UTL ", DEBUG_DEBUG, 255, __VA_ARGS__)
#define uTrace(...) taosPrintLog("UTL ", DEBUG_TRACE, 255, __VA_ARGS__)

/* -- taosArray: a growable array of fixed-size elements --------------------------------- */
typedef struct SArray {
  size_t size;
  size_t capacity;
  size_t elemSize;
  void* pData;
} SArray;
typedef void (*FDelete)(void*);
SArray* taosArrayInit(size_t size, size_t elemSize);
void* taosArrayPush(SArray* pArray, const void* pData);
void* taosArrayPop(SArray* pArray);
void* taosArrayGet(const SArray* pArray, size_t index);
void* taosArrayGetP(const SArray* pArray, size_t index);
void* taosArrayGetLast(const SArray* pArray);
size_t taosArrayGetSize(const SArray* pArray);
void taosArrayRemove(SArray* pArray, size_t index);
void taosArrayClear(SArray* pArray);
void* taosArrayDestroy(SArray* pArray);
void taosArrayDestroyP(SArray* pArray, FDelete fp);
void taosArrayDestroyEx(SArray* pArray, FDelete fp);
SArray* taosArrayDup(const SArray* pSrc, void* (*fn)(void*));
void* taosArrayAddAll(SArray* pArray, const SArray* pInput);
void* taosArrayReserve(SArray* pArray, int32_t num);
void taosArraySort(SArray* pArray, int (*compar)(const void*, const void*));

/* -- taosHash: a hash map copying keys and values; a duplicate key is refused ---------- */
typedef struct SHashObj SHashObj;
typedef uint32_t (*_hash_fn_t)(const char*, uint32_t);
typedef enum { HASH_NO_LOCK, HASH_ENTRY_LOCK } SHashLockTypeE;
#define TSDB_DATA_TYPE_BINARY 8
#define TSDB_DATA_TYPE_INT 4
#define TSDB_DATA_TYPE_BIGINT 5
_hash_fn_t taosGetDefaultHashFunction(int32_t type);
SHashObj* taosHashInit(size_t capacity, _hash_fn_t fn, bool update, SHashLockTypeE type);
int32_t taosHashPut(SHashObj* pHashObj, const void* key, size_t keyLen, const void* data, size_t size);
void* taosHashGet(SHashObj* pHashObj, const void* key, size_t keyLen);
int32_t taosHashRemove(SHashObj* pHashObj, const void* key, size_t keyLen);
int32_t taosHashGetSize(const SHashObj* pHashObj);
void taosHashClear(SHashObj* pHashObj);
void taosHashCleanup(SHashObj* pHashObj);
void* taosHashIterate(SHashObj* pHashObj, void* p);
void taosHashCancelIterate(SHashObj* pHashObj, void* p);
void* taosHashGetKey(void* data, size_t* keyLen);
void taosHashSetFreeFp(SHashObj* pHashObj, FDelete fp);
typedef struct SSHashObj SSHashObj;
void tSimpleHashCleanup(SSHashObj* p);

/* -- tref ------------------------------------------------------------------------------- */
int32_t taosOpenRef(int32_t max, void (*fp)(void*));
void taosCloseRef(int32_t rsetId);
int64_t taosAddRef(int32_t rsetId, void* p);
int32_t taosRemoveRef(int32_t rsetId, int64_t rid);
void* taosAcquireRef(int32_t rsetId, int64_t rid);
int32_t taosReleaseRef(int32_t rsetId, int64_t rid);

/* -- timers on a virtual clock ---------------------------------------------------------- */
typedef void* tmr_h;
typedef void (*TAOS_TMR_CALLBACK)(void*, void*);
void* taosTmrInit(int maxTmr, int resoultion, int longest, const char* label);
void taosTmrCleanUp(void* handle);
tmr_h taosTmrStart(TAOS_TMR_CALLBACK fp, int mseconds, void* param, void* handle);
bool taosTmrStop(tmr_h tmrId);
bool taosTmrStopA(tmr_h* tmrId);
bool taosTmrReset(TAOS_TMR_CALLBACK fp, int mseconds, void* param, void* handle, tmr_h* pTmrId);

/* -- tdb: ordered tables of byte keys and values ---------------------------------------- */
typedef struct TDB TDB;
typedef struct TTB TTB;
typedef struct TXN TXN;
typedef struct TBC TBC;
typedef int (*tdb_cmpr_fn_t)(const void* pKey1, int32_t kLen1, const void* pKey2, int32_t kLen2);
#define TDB_TXN_WRITE 0x1
#define TDB_TXN_READ_UNCOMMITTED 0x2
int32_t tdbOpen(const char* dbname, int pageSize, int cacheSize, TDB** ppDb, int8_t rollback);
int32_t tdbClose(TDB* pDb);
int32_t tdbTbOpen(const char* tbname, int keyLen, int valLen, tdb_cmpr_fn_t keyCmprFn, TDB* pEnv, TTB** ppTb,
                  int8_t rollback);
int32_t tdbTbClose(TTB* pTb);
int32_t tdbTbUpsert(TTB* pTb, const void* pKey, int nKey, const void* pVal, int nVal, TXN* pTxn);
int32_t tdbTbDelete(TTB* pTb, const void* pKey, int kLen, TXN* pTxn);
int32_t tdbTbGet(TTB* pTb, const void* pKey, int kLen, void** ppVal, int* vLen);
int32_t tdbTbcOpen(TTB* pTb, TBC** ppTbc, TXN* pTxn);
int32_t tdbTbcMoveToFirst(TBC* pTbc);
int32_t tdbTbcNext(TBC* pTbc, void** ppKey, int* kLen, void** ppVal, int* vLen);
int32_t tdbTbcClose(TBC* pTbc);
int32_t tdbBegin(TDB* pDb, TXN** pTxn, void* (*xMalloc)(void*, size_t), void (*xFree)(void*, void*), void* xArg,
                 int flags);
int32_t tdbCommit(TDB* pDb, TXN* pTxn);
int32_t tdbPostCommit(TDB* pDb, TXN* pTxn);
int32_t tdbAbort(TDB* pDb, TXN* pTxn);
void tdbFree(void* p);
void* tdbDefaultMalloc(void* arg, size_t size);
/* the shim's fault switch: the next call of OP fails */
typedef enum { SHIM_TDB_BEGIN, SHIM_TDB_PUT, SHIM_TDB_DELETE, SHIM_TDB_COMMIT, SHIM_TDB_OPS } EShimTdbOp;
void shimTdbFailNext(EShimTdbOp op);
void tdbDefaultFree(void* arg, void* ptr);

/* -- messages, rpc ---------------------------------------------------------------------- */
typedef struct SEp {
  char fqdn[TSDB_FQDN_LEN];
  uint16_t port;
} SEp;
typedef struct SEpSet {
  int8_t inUse;
  int8_t numOfEps;
  SEp eps[TSDB_MAX_REPLICA];
} SEpSet;
typedef struct SMsgHead {
  int32_t contLen;
  int32_t vgId;
} SMsgHead;
typedef struct SRpcHandleInfo {
  void* handle;
  int64_t refId;
  void* ahandle;
  int32_t noResp;
  int32_t persistHandle;
  int32_t hasEpSet;
} SRpcHandleInfo;
typedef struct SRpcMsg {
  int32_t msgType;
  void* pCont;
  int32_t contLen;
  int32_t code;
  SRpcHandleInfo info;
} SRpcMsg;
typedef struct SMsgCb {
  void* clientRpc;
  void* mgmt;
} SMsgCb;
#define TDMT_MND_STREAM_HEARTBEAT 0x1001
#define TDMT_STREAM_TASK_CHECK 0x1002
#define TDMT_STREAM_TASK_DROP 0x1003
#define TDMT_STREAM_TASK_CHECK_RSP 0x1004
#define TDMT_STREAM_SCAN_HISTORY 0x1005
#define TDMT_STREAM_SCAN_HISTORY_FINISH 0x1006
#define TDMT_VND_STREAM_TASK_RESET 0x1007
#define TDMT_STREAM_TASK_CHECKPOINT_READY 0x1008
#define TDMT_VND_STREAM_SCAN_HISTORY 0x1009
#define TDMT_VND_STREAM_TASK_CHECK 0x100A
#define TDMT_STREAM_RETRIEVE 0x100B
#define TDMT_STREAM_TASK_DISPATCH 0x100C
#define TDMT_STREAM_TASK_UPDATE_CHKPT 0x100D
#define TDMT_STREAM_TASK_PAUSE 0x100E
#define TDMT_STREAM_TASK_RESUME 0x100F
#define TDMT_VND_STREAM_HTASK_DROP 0x1010
#define TDMT_STREAM_TASK_RUN 0x1011
#define STREAM_QUEUE 7
#define WRITE_QUEUE 2
#define FETCH_QUEUE 3
#define MGMT_HANDLE 0
int32_t tmsgSendReq(const SEpSet* epSet, SRpcMsg* pMsg);
int32_t tmsgPutToQueue(const SMsgCb* msgcb, int32_t qtype, SRpcMsg* pMsg);
void tmsgSendRsp(SRpcMsg* pMsg);
void* rpcMallocCont(int64_t contLen);
void rpcFreeCont(void* pCont);
void epsetAssign(SEpSet* pDst, const SEpSet* pSrc);
bool isEpsetEqual(const SEpSet* s1, const SEpSet* s2);
void epsetToStr(const SEpSet* pEpSet, char* pBuf, int32_t len);
/* what the shim captured: each message sent, in order (runtime.c) */
enum { SHIM_SENT_REQ, SHIM_SENT_QUEUE, SHIM_SENT_RSP };
typedef struct SShimSent {
  int32_t channel;
  int32_t msgType;
  int32_t contLen;
  void* pCont;
} SShimSent;
SArray* shimTakeSent(void);
int32_t shimRunJobs(void);
int32_t shimAdvanceClock(int64_t ms);
int32_t shimArmedTimers(void);
bool shimTimerArmed(tmr_h id);

/* -- what the task record names but the meta never uses ---------------------------------- */
typedef struct SPackedData {
  void* msgStr;
  int32_t msgLen;
  int64_t ver;
  void* rawPtr;
} SPackedData;
typedef struct SDataBlockInfo {
  int64_t rows;
  int32_t childId;
  int16_t type;
} SDataBlockInfo;
typedef struct SSDataBlock {
  SDataBlockInfo info;
  SArray* pDataBlock;
} SSDataBlock;
typedef struct SUseDbRsp {
  char db[TSDB_DB_FNAME_LEN];
  int64_t uid;
  int32_t vgVersion;
  int32_t vgNum;
  int16_t hashPrefix;
  int16_t hashSuffix;
  int8_t hashMethod;
  SArray* pVgroupInfos;
} SUseDbRsp;
typedef struct SSchemaWrapper {
  int32_t nCols;
  int32_t version;
  void* pSchema;
} SSchemaWrapper;
typedef struct STSchema STSchema;
typedef struct SVersionRange {
  int64_t minVer;
  int64_t maxVer;
} SVersionRange;
typedef struct STimeWindow {
  int64_t skey;
  int64_t ekey;
} STimeWindow;
typedef struct SRetrieveTableRsp SRetrieveTableRsp;
typedef struct SStreamState SStreamState;
typedef struct STaosQueue STaosQueue;
typedef struct STaosQall STaosQall;
typedef struct SWalReader SWalReader;
typedef struct SVgroupInfo {
  int32_t vgId;
  uint32_t hashBegin;
  uint32_t hashEnd;
  SEpSet epSet;
  int32_t numOfTable;
  int32_t taskId;
} SVgroupInfo;

/* -- the rest the stream files name: backends, executor, scheduler, queues ------------- */
#define PRIzu "zu"
#define SNODE_HANDLE -1
#define TSDB_DATA_TYPE_VARCHAR TSDB_DATA_TYPE_BINARY
#define DEF_QITEM 0
#define STREAM_INPUT__TRANS_STATE 11
#define STREAM_TRANS_STATE 9
#define EPSET_TO_STR(_eps, _buf) epsetToStr((_eps), (_buf), sizeof(_buf));
#define qDebug(...) taosPrintLog("QRY ", DEBUG_DEBUG, 255, __VA_ARGS__)
#define htonl(x) __builtin_bswap32(x)
#define ntohl(x) __builtin_bswap32(x)
extern char tsDataDir[];
extern float tsSinkDataRate;
typedef pthread_mutexattr_t TdThreadMutexAttr;
typedef pthread_rwlockattr_t TdThreadRwlockAttr;
#define taosThreadMutexAttrInit(a) pthread_mutexattr_init(a)
#define taosThreadMutexAttrSetType(a, t) pthread_mutexattr_settype((a), (t))
#define taosThreadMutexAttrDestroy(a) pthread_mutexattr_destroy(a)
#define taosThreadRwlockAttrInit(a) pthread_rwlockattr_init(a)
#define taosThreadRwlockAttrDestroy(a) pthread_rwlockattr_destroy(a)
typedef struct SBackendWrapper {
  SHashObj* cfInst;
} SBackendWrapper;
typedef struct STaskDbWrapper {
  int64_t refId;
  void* pTask;
  void* pMeta;
} STaskDbWrapper;
void streamBackendCleanup(void* arg);
void streamBackendHandleCleanup(void* arg);
void taskDbDestroy2(void* arg);
bool streamBackendDataIsExist(const char* path, int64_t chkpId, int32_t vgId);
void* streamBackendInit(const char* path, int64_t chkpId, int32_t vgId);
int32_t streamStateCvtDataFormat(char* path, char* key, void* cfInst);
int32_t taskDbAddRef(void* pTaskDb);
STaskDbWrapper* taskDbOpen(char* path, char* key, int64_t chkpId);
int32_t taskDbRemoveRef(void* pTaskDb);
void streamStateClose(SStreamState* pState, bool remove);
void* bkdMgtCreate(char* path);
void bkdMgtDestroy(void* bm);
struct SSchedMsg;
typedef void (*__sched_fn_t)(struct SSchedMsg* msg);
typedef struct SSchedMsg {
  __sched_fn_t fp;
  __sched_fn_t tfp;
  void* msg;
  void* ahandle;
  void* thandle;
} SSchedMsg;
typedef int32_t (*__async_exec_fn_t)(void* param);
void* taosInitScheduler(int32_t queueSize, int32_t numOfThreads, const char* label, void* pool);
void taosCleanUpScheduler(void* param);
int taosScheduleTask(void* queueScheduler, SSchedMsg* pMsg);
void taosRemoveDir(const char* dirname);
void qDestroyTask(void* tinfo);
int32_t qKillTask(void* tinfo, int32_t rspCode);
int32_t qRestoreStreamOperatorOption(void* tinfo);
int32_t qSetStreamOperatorOptionForScanHistory(void* tinfo);
int32_t qStreamInfoResetTimewindowFilter(void* tinfo);
int32_t qStreamRecoverFinish(void* tinfo);
int32_t qStreamSourceScanParamForHistoryScanStep1(void* tinfo, SVersionRange* pVerRange, STimeWindow* pWindow);
int32_t qStreamSourceScanParamForHistoryScanStep2(void* tinfo, SVersionRange* pVerRange, STimeWindow* pWindow);
int64_t walReaderGetCurrentVer(const SWalReader* pReader);
void walCloseReader(SWalReader* pRead);
void walReaderValidVersionRange(SWalReader* pReader, int64_t* sver, int64_t* ever);
int32_t tGenIdPI32(void);
int64_t tGenIdPI64(void);
void* taosAllocateQitem(int32_t size, int32_t itype, int64_t dataSize);
void taosFreeQitem(void* pItem);
typedef struct SVDropStreamTaskReq {
  SMsgHead head;
  int64_t streamId;
  int32_t taskId;
} SVDropStreamTaskReq;

#endif
