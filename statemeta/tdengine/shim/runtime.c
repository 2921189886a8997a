/* The runtime the stream files lean on: errors, logging, a virtual clock with its timers, tref,
 * latches, the rpc (every send captured for the driver to report, the heartbeat's bytes
 * included) and the scheduler (jobs queued, run by the driver after each call). */
#include <time.h>
#include "shim.h"

__thread int32_t terrno;
int32_t stDebugFlag = 255;
int32_t tqDebugFlag = 255;
int32_t uDebugFlag = 255;
char tsDataDir[TD_PATH_MAX] = "/tmp";
float tsSinkDataRate = 2.0f;
void* streamTimer = NULL;

const char* shimErrorText(int32_t code) {
  static __thread char buf[32];
  snprintf(buf, sizeof(buf), "0x%08x", (uint32_t)code);
  return buf;
}

void shimAssertFailed(const char* what, const char* file, int line) {
  fprintf(stderr, "statemeta-shim: ASSERT(%s) failed at %s:%d\n", what, file, line);
  fflush(stderr);
  abort();
}

void shimUnmodelled(const char* name) {
  fprintf(stderr, "statemeta-shim: %s is outside what the shim models\n", name);
  fflush(stderr);
  abort();
}

/* Logging goes nowhere unless STATEMETA_SHIM_LOG is set (then to stderr). */
void taosPrintLog(const char* flags, int32_t level, int32_t dflag, const char* format, ...) {
  (void)level, (void)dflag;
  static int on = -1;
  if (on < 0) on = getenv("STATEMETA_SHIM_LOG") != NULL;
  if (!on) return;
  va_list ap;
  va_start(ap, format);
  fprintf(stderr, "%s", flags);
  vfprintf(stderr, format, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* -- the virtual clock and its timers ---------------------------------------------------- */
static pthread_mutex_t clockLock = PTHREAD_MUTEX_INITIALIZER;
static int64_t nowMs = 1700000000000LL;

typedef struct SShimTimer {
  TAOS_TMR_CALLBACK fp;
  void* param;
  int64_t due;
  bool armed;
  struct SShimTimer* next;
} SShimTimer;
static SShimTimer* timers = NULL;

int64_t taosGetTimestampMs(void) {
  pthread_mutex_lock(&clockLock);
  int64_t t = nowMs;
  pthread_mutex_unlock(&clockLock);
  return t;
}
int64_t taosGetTimestampUs(void) { return taosGetTimestampMs() * 1000; }

/* A sleeping caller (a wait loop of the C) yields a real millisecond, never the virtual clock:
 * the driver decides when virtual time passes. */
void shimSleepMs(int32_t ms) {
  (void)ms;
  shimOnWait();
  struct timespec ts = {0, 1000000};
  nanosleep(&ts, NULL);
}

void* taosTmrInit(int maxTmr, int resolution, int longest, const char* label) {
  (void)maxTmr, (void)resolution, (void)longest, (void)label;
  return &timers;
}
void taosTmrCleanUp(void* handle) { (void)handle; }

tmr_h taosTmrStart(TAOS_TMR_CALLBACK fp, int mseconds, void* param, void* handle) {
  (void)handle;
  SShimTimer* t = calloc(1, sizeof(SShimTimer));
  pthread_mutex_lock(&clockLock);
  *t = (SShimTimer){.fp = fp, .param = param, .due = nowMs + mseconds, .armed = true, .next = timers};
  timers = t;
  pthread_mutex_unlock(&clockLock);
  return t;
}

bool taosTmrStop(tmr_h id) {
  if (id == NULL) return false;
  pthread_mutex_lock(&clockLock);
  SShimTimer* t = id;
  bool was = t->armed;
  t->armed = false;
  pthread_mutex_unlock(&clockLock);
  return was;
}

bool taosTmrStopA(tmr_h* id) {
  bool was = taosTmrStop(*id);
  *id = NULL;
  return was;
}

bool taosTmrReset(TAOS_TMR_CALLBACK fp, int mseconds, void* param, void* handle, tmr_h* pTmrId) {
  if (*pTmrId == NULL) {
    *pTmrId = taosTmrStart(fp, mseconds, param, handle);
    return true;
  }
  pthread_mutex_lock(&clockLock);
  SShimTimer* t = *pTmrId;
  *t = (SShimTimer){.fp = fp, .param = param, .due = nowMs + mseconds, .armed = true, .next = t->next};
  pthread_mutex_unlock(&clockLock);
  return true;
}

/* Moves the clock by MS, firing each due timer in due order; returns how many fired. */
int32_t shimAdvanceClock(int64_t ms) {
  int32_t fired = 0;
  int64_t until = taosGetTimestampMs() + ms;
  while (1) {
    pthread_mutex_lock(&clockLock);
    SShimTimer* first = NULL;
    for (SShimTimer* t = timers; t != NULL; t = t->next) {
      if (t->armed && t->due <= until && (first == NULL || t->due < first->due)) first = t;
    }
    if (first == NULL) {
      nowMs = until;
      pthread_mutex_unlock(&clockLock);
      return fired;
    }
    nowMs = TMAX(nowMs, first->due);
    first->armed = false;
    pthread_mutex_unlock(&clockLock);
    first->fp(first->param, first);
    fired += 1;
  }
}

bool shimTimerArmed(tmr_h id) {
  if (id == NULL) return false;
  pthread_mutex_lock(&clockLock);
  bool armed = ((SShimTimer*)id)->armed;
  pthread_mutex_unlock(&clockLock);
  return armed;
}

int32_t shimArmedTimers(void) {
  int32_t n = 0;
  pthread_mutex_lock(&clockLock);
  for (SShimTimer* t = timers; t != NULL; t = t->next) n += t->armed;
  pthread_mutex_unlock(&clockLock);
  return n;
}

/* -- tref: objects behind ids, freed when removed and no longer acquired ---------------- */
typedef struct SRefEntry {
  void* p;
  int32_t count;
  bool removed;
} SRefEntry;
typedef struct SRefSet {
  void (*fp)(void*);
  SArray* entries; /* SArray<SRefEntry>, rid = index + 1 */
} SRefSet;
static SRefSet refSets[16];
static int32_t numOfRefSets = 0;
static pthread_mutex_t refLock = PTHREAD_MUTEX_INITIALIZER;

int32_t taosOpenRef(int32_t max, void (*fp)(void*)) {
  (void)max;
  pthread_mutex_lock(&refLock);
  int32_t id = numOfRefSets++;
  refSets[id] = (SRefSet){.fp = fp, .entries = taosArrayInit(8, sizeof(SRefEntry))};
  pthread_mutex_unlock(&refLock);
  return id + 1;
}

void taosCloseRef(int32_t rsetId) { (void)rsetId; }

int64_t taosAddRef(int32_t rsetId, void* p) {
  pthread_mutex_lock(&refLock);
  SRefEntry e = {.p = p, .count = 0, .removed = false};
  taosArrayPush(refSets[rsetId - 1].entries, &e);
  int64_t rid = (int64_t)taosArrayGetSize(refSets[rsetId - 1].entries);
  pthread_mutex_unlock(&refLock);
  return rid;
}

static SRefEntry* refEntry(int32_t rsetId, int64_t rid) {
  if (rsetId < 1 || rsetId > numOfRefSets || rid < 1) return NULL;
  return taosArrayGet(refSets[rsetId - 1].entries, (size_t)(rid - 1));
}

static void refRelease(int32_t rsetId, SRefEntry* e) {
  if (e->removed && e->count == 0 && e->p != NULL) {
    void* p = e->p;
    e->p = NULL;
    pthread_mutex_unlock(&refLock);
    refSets[rsetId - 1].fp(p);
    pthread_mutex_lock(&refLock);
  }
}

int32_t taosRemoveRef(int32_t rsetId, int64_t rid) {
  pthread_mutex_lock(&refLock);
  SRefEntry* e = refEntry(rsetId, rid);
  int32_t code = -1;
  if (e != NULL && !e->removed) {
    e->removed = true;
    refRelease(rsetId, e);
    code = 0;
  }
  pthread_mutex_unlock(&refLock);
  return code;
}

void* taosAcquireRef(int32_t rsetId, int64_t rid) {
  pthread_mutex_lock(&refLock);
  SRefEntry* e = refEntry(rsetId, rid);
  void* p = NULL;
  if (e != NULL && !e->removed && e->p != NULL) {
    e->count += 1;
    p = e->p;
  }
  pthread_mutex_unlock(&refLock);
  return p;
}

int32_t taosReleaseRef(int32_t rsetId, int64_t rid) {
  pthread_mutex_lock(&refLock);
  SRefEntry* e = refEntry(rsetId, rid);
  int32_t code = -1;
  if (e != NULL && e->count > 0) {
    e->count -= 1;
    refRelease(rsetId, e);
    code = 0;
  }
  pthread_mutex_unlock(&refLock);
  return code;
}

/* -- latches: a reader-writer spin on an int, like TDengine's --------------------------- */
void taosInitRWLatch(SRWLatch* p) { *p = 0; }
void taosWLockLatch(SRWLatch* p) {
  while (!__sync_bool_compare_and_swap(p, 0, -1)) shimSleepMs(0);
}
void taosWUnLockLatch(SRWLatch* p) { __atomic_store_n(p, 0, __ATOMIC_SEQ_CST); }
void taosRLockLatch(SRWLatch* p) {
  while (1) {
    int32_t v = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    if (v >= 0 && __sync_bool_compare_and_swap(p, v, v + 1)) return;
    shimSleepMs(0);
  }
}
void taosRUnLockLatch(SRWLatch* p) { __atomic_sub_fetch(p, 1, __ATOMIC_SEQ_CST); }

/* -- rpc: every message is captured, in order, for the driver --------------------------- */
static pthread_mutex_t sentLock = PTHREAD_MUTEX_INITIALIZER;
static SArray* sent = NULL; /* SArray<SShimSent> */

void* rpcMallocCont(int64_t contLen) { return calloc(1, (size_t)contLen); }
void rpcFreeCont(void* pCont) { free(pCont); }

static void capture(int32_t channel, SRpcMsg* pMsg) {
  pthread_mutex_lock(&sentLock);
  if (sent == NULL) sent = taosArrayInit(8, sizeof(SShimSent));
  SShimSent s = {.channel = channel, .msgType = pMsg->msgType, .contLen = pMsg->contLen, .pCont = pMsg->pCont};
  taosArrayPush(sent, &s);
  pthread_mutex_unlock(&sentLock);
}

int32_t tmsgSendReq(const SEpSet* epSet, SRpcMsg* pMsg) {
  (void)epSet;
  capture(SHIM_SENT_REQ, pMsg);
  return 0;
}
int32_t tmsgPutToQueue(const SMsgCb* msgcb, int32_t qtype, SRpcMsg* pMsg) {
  (void)msgcb, (void)qtype;
  capture(SHIM_SENT_QUEUE, pMsg);
  return 0;
}
void tmsgSendRsp(SRpcMsg* pMsg) { capture(SHIM_SENT_RSP, pMsg); }

/* Hands the captured messages to the caller, who frees each pCont and the array. */
SArray* shimTakeSent(void) {
  pthread_mutex_lock(&sentLock);
  SArray* out = sent;
  sent = NULL;
  pthread_mutex_unlock(&sentLock);
  return out;
}

/* -- the scheduler: jobs wait for the driver --------------------------------------------- */
static pthread_mutex_t jobLock = PTHREAD_MUTEX_INITIALIZER;
static SArray* jobs = NULL; /* SArray<SSchedMsg> */

/* A handle of its own (the meta frees it at close, as tsched's); the queue is the driver's. */
void* taosInitScheduler(int32_t queueSize, int32_t numOfThreads, const char* label, void* pool) {
  (void)queueSize, (void)numOfThreads, (void)label, (void)pool;
  return calloc(1, sizeof(void*));
}
void taosCleanUpScheduler(void* param) { (void)param; }
int taosScheduleTask(void* queueScheduler, SSchedMsg* pMsg) {
  (void)queueScheduler;
  pthread_mutex_lock(&jobLock);
  if (jobs == NULL) jobs = taosArrayInit(4, sizeof(SSchedMsg));
  taosArrayPush(jobs, pMsg);
  pthread_mutex_unlock(&jobLock);
  return 0;
}

int32_t shimRunJobs(void) {
  int32_t ran = 0;
  while (1) {
    pthread_mutex_lock(&jobLock);
    if (taosArrayGetSize(jobs) == 0) {
      pthread_mutex_unlock(&jobLock);
      return ran;
    }
    SSchedMsg job = *(SSchedMsg*)taosArrayGet(jobs, 0);
    taosArrayRemove(jobs, 0);
    pthread_mutex_unlock(&jobLock);
    job.fp(&job);
    ran += 1;
  }
}
