/* The driver: a process holding TDengine's compiled stream files, told what to call one line at
 * a time on stdin and answering one line on stdout (statemeta/tdengine/driver.py speaks it).
 *
 *   meta DIR                      streamMetaInit, then streamMetaOpen(DIR, vgId 7)   -> = 0
 *   task I SID TID FILL HSID HTID SSID STID DISPATCH TRIGGER
 *                                 a task record for slot I, set up as the meta's
 *                                 expand does (streamTaskInit)                     -> = 0
 *   sm I OP [EVENT]               a call on slot I's state machine (OP: handle,
 *                                 complete, restore, reset, set_ready), on a
 *                                 thread of its own                -> = CODE | = pending
 *   view1                         each slot: status active prev_status prev_event
 *                                 n [required event]*n             -> = v ... | ...
 *   mo I OP [ARG]                 a call of the meta (levels 2 and 3: OP as in metaCall),
 *                                 on a thread of its own             -> = VALUE | = pending
 *   view2                         the meta as JSON, what the C keeps  -> = {...}
 *   sent                          the heartbeats sent since the last ask, hex -> = [hex ...]
 *
 * A call answers when it returns, or "pending" as soon as it waits in a sleep loop of the C
 * (an attached event waiting for its status, unregister or notify_close waiting for a task's
 * timer, a free waiting for it): the wait goes on, on its thread. Before any later call answers,
 * every call still waiting has either returned or gone round its loop again after that call
 * (settle), so what a wait does once it can go on shows in the next view, never later. A
 * sanitizer report or a failed ASSERT ends the process; its stderr says why. */
#include <unistd.h>
#include "shim.h"
#include "streamInt.h"
#include "streamsm.h"

#define MAX_SLOTS 16
#define NO_EVENT (-1)

static SStreamMeta* meta = NULL;
static bool closing = false; /* the view's "closing": notify_close was called since open or the last election as leader */
static SStreamTask* slots[MAX_SLOTS];
static SMsgCb msgCb;
static int32_t level = 1;

/* -- a call on its own thread, answered when it returns or when it starts waiting --------- */
typedef struct SCall {
  char op[32];
  int32_t slot;
  int32_t event;
  bool meta;     /* a call of the meta (metaCall), else of the state machine (smCall) */
  int64_t arg;   /* the meta call's argument */
  int64_t value; /* the answer */
  bool done, waiting;
  int64_t waits; /* how often it has slept in a wait loop of the C */
} SCall;

#define MAX_WAITING 64
static SCall* waitingCalls[MAX_WAITING]; /* answered pending, not yet settled as returned */
static int32_t numWaiting = 0;

static int64_t metaCall(const char* op, int32_t slot, int64_t arg);
static int32_t metaOpen(void);

static pthread_mutex_t callLock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t callCond = PTHREAD_COND_INITIALIZER;
static __thread SCall* current = NULL;

/* Called by the shim's sleep: the calling thread is in a wait loop of the C. */
void shimOnWait(void) {
  if (current == NULL) return;
  pthread_mutex_lock(&callLock);
  current->waiting = true;
  current->waits += 1;
  pthread_cond_broadcast(&callCond);
  pthread_mutex_unlock(&callLock);
}

static int32_t smCall(SCall* c) {
  SStreamTask* t = slots[c->slot];
  SStreamTaskSM* sm = t->status.pSM;
  if (strcmp(c->op, "handle") == 0) return streamTaskHandleEvent(sm, (EStreamTaskEvent)c->event);
  if (strcmp(c->op, "complete") == 0) return streamTaskOnHandleEventSuccess(sm, (EStreamTaskEvent)c->event);
  if (strcmp(c->op, "reset") == 0) {
    streamTaskResetStatus(t);
    return 0;
  }
  /* restore and set_ready return nothing: the answer is the guard their callers apply
   * (streamTaskResume restores only from pause or halt; set_ready refuses dropping) */
  ETaskStatus s = streamTaskGetStatus(t)->state;
  if (strcmp(c->op, "restore") == 0) {
    if (s != TASK_STATUS__PAUSE && s != TASK_STATUS__HALT) return TSDB_CODE_STREAM_INVALID_STATETRANS;
    streamTaskRestoreStatus(t);
    return 0;
  }
  if (strcmp(c->op, "set_ready") == 0) {
    streamTaskSetStatusReady(t);
    return s == TASK_STATUS__DROPPING ? TSDB_CODE_STREAM_INVALID_STATETRANS : 0;
  }
  return TSDB_CODE_INVALID_PARA;
}

static void* callThread(void* arg) {
  SCall* c = arg;
  current = c;
  int64_t value = c->meta ? metaCall(c->op, c->slot, c->arg) : smCall(c);
  pthread_mutex_lock(&callLock);
  c->value = value;
  c->done = true; /* answered as pending: settle frees it */
  pthread_cond_broadcast(&callCond);
  pthread_mutex_unlock(&callLock);
  return NULL;
}

/* Every call answered pending runs until it returns or has slept twice more: the first sleep
 * may follow a check made before the last call's effect, the second follows one made after
 * it. Called with callLock held. */
static void settle(void) {
  int32_t kept = 0;
  for (int32_t i = 0; i < numWaiting; ++i) {
    SCall* w = waitingCalls[i];
    int64_t seen = w->waits;
    while (!w->done && w->waits < seen + 2) pthread_cond_wait(&callCond, &callLock);
    if (w->done) free(w);
    else waitingCalls[kept++] = w;
  }
  numWaiting = kept;
}

static void runCall(SCall* c) {
  pthread_t th;
  pthread_create(&th, NULL, callThread, c);
  pthread_detach(th);
  pthread_mutex_lock(&callLock);
  while (!c->done && !c->waiting) pthread_cond_wait(&callCond, &callLock);
  bool done = c->done;
  int64_t value = c->value;
  if (!done) {
    if (numWaiting == MAX_WAITING) {
      fprintf(stderr, "statemeta-shim: more than %d calls waiting at once\n", MAX_WAITING);
      abort();
    }
    waitingCalls[numWaiting++] = c;
  }
  settle();
  pthread_mutex_unlock(&callLock);
  if (done) {
    printf("= %" PRId64 "\n", value);
    free(c);
  } else {
    printf("= pending\n");
  }
}


/* -- the meta (levels 2 and 3) --------------------------------------------------------------- */
static SStreamTask* templates[MAX_SLOTS]; /* each slot's record, copied at each register */
static SArray* handles[MAX_SLOTS];        /* SArray<SStreamTask*>: acquired, not released */
static SStreamTask* lastReleased[MAX_SLOTS];
static char metaPath[TD_PATH_MAX];

static void triggerTick(void* param, void* tmrId) {
  SStreamTask* t = param;
  taosTmrReset(triggerTick, (int)t->info.triggerParam, t, streamTimer, &t->schedInfo.pDelayTimer);
}

/* The meta's expand (tqExpandTask's part the harness needs): initialise the task, and a stream
 * task with a trigger keeps one more reference for its trigger timer. */
static int32_t expandTask(void* ahandle, SStreamTask* t, int64_t ver) {
  (void)ahandle;
  int32_t code = streamTaskInit(t, meta, &msgCb, ver);
  if (code == 0 && t->info.triggerParam != 0 && t->info.fillHistory == 0) {
    atomic_add_fetch_32(&t->refCnt, 1);
    t->schedInfo.pDelayTimer = taosTmrStart(triggerTick, (int)t->info.triggerParam, t, streamTimer);
  }
  return code;
}

static SStreamTask* mapped(int32_t slot) {
  STaskId id = {.streamId = templates[slot]->id.streamId, .taskId = templates[slot]->id.taskId};
  SStreamTask** pp = taosHashGet(meta->pTasksMap, &id, sizeof(id));
  return pp == NULL ? NULL : *pp;
}

static SStreamTask* recordOf(int32_t slot) {
  SStreamTask* t = calloc(1, sizeof(SStreamTask));
  memcpy(t, templates[slot], sizeof(SStreamTask));
  t->upstreamInfo.pList = taosArrayInit(1, POINTER_BYTES);
  t->exec.qmsg = strdup(""); /* a record's query plan: empty, never run */
  if (t->outputInfo.type == TASK_OUTPUT__TABLE) t->outputInfo.tbSink.pSchemaWrapper = calloc(1, sizeof(SSchemaWrapper));
  return t;
}

static void freeRecord(SStreamTask* t) {
  taosArrayDestroy(t->upstreamInfo.pList);
  free(t->exec.qmsg);
  free(t->outputInfo.tbSink.pSchemaWrapper);
  free(t);
}

static void taskTimerEnd(void* param, void* tmrId) {
  (void)tmrId;
  SStreamTask* t = param;
  atomic_sub_fetch_32(&t->status.timerActive, 1);
}

/* The vnode's start-complete callback (a round's end): nothing the harness observes. */
static int32_t startComplete(SStreamMeta* m) {
  (void)m;
  return 0;
}

/* A reopen forgets the harness's handles, as the reference does (its tasks were freed with the
 * closed meta: a release through one would be the harness's use after free, not the meta's). */
static void forgetHandles(void) {
  for (int32_t i = 0; i < MAX_SLOTS; ++i) {
    if (handles[i] != NULL) taosArrayClear(handles[i]);
    lastReleased[i] = NULL;
  }
}

static int32_t metaOpen(void) {
  forgetHandles();
  meta = streamMetaOpen(metaPath, NULL, expandTask, 7, -1, startComplete);
  closing = false;
  return meta == NULL ? -1 : 0;
}

#define NONE_CODE INT32_MIN /* the answer for a slot whose task is not mapped */

/* One call of the meta; the answer is what the C returns (a code, a bool, an id), nothing it
 * does not. */
static int64_t metaCall(const char* op, int32_t slot, int64_t arg) {
  SStreamTask* tmpl = slot >= 0 ? templates[slot] : NULL;
  if (strcmp(op, "register") == 0) {
    SStreamTask* t = recordOf(slot);
    bool added = false;
    int32_t code = streamMetaRegisterTask(meta, 1, t, &added);
    if (!added && code == 0) freeRecord(t); /* the caller frees a record not added */
    return code != 0 ? code : added;
  }
  if (strcmp(op, "unregister") == 0) return streamMetaUnregisterTask(meta, tmpl->id.streamId, tmpl->id.taskId);
  if (strcmp(op, "acquire") == 0) {
    SStreamTask* t = streamMetaAcquireTask(meta, tmpl->id.streamId, tmpl->id.taskId);
    if (t != NULL) taosArrayPush(handles[slot], &t);
    return t != NULL;
  }
  if (strcmp(op, "release") == 0) {
    SStreamTask** last = taosArrayPop(handles[slot]);
    SStreamTask* t = last != NULL ? *last : lastReleased[slot];
    if (t == NULL) return 0;
    lastReleased[slot] = t;
    streamMetaReleaseTask(meta, t);
    return 0;
  }
  if (strcmp(op, "commit") == 0) return streamMetaCommit(meta);
  if (strcmp(op, "load_all") == 0) return streamMetaLoadAllTasks(meta);
  if (strcmp(op, "latest_checkpoint_id") == 0) return streamMetaGetLatestCheckpointId(meta);
  if (strcmp(op, "start_all") == 0) { /* the vnode's start: the restart sentinel set, then start */
    streamMetaWLock(meta);
    if (taosArrayGetSize(meta->pTaskList) > 0) meta->startInfo.taskStarting = 1;
    streamMetaWUnLock(meta);
    return streamMetaStartAllTasks(meta);
  }
  if (strcmp(op, "start_one") == 0) { /* a task it cannot acquire: TASK_IVLD_STATUS, the protocol's unknown task */
    int32_t code = streamMetaStartOneTask(meta, tmpl->id.streamId, tmpl->id.taskId);
    return code == TSDB_CODE_STREAM_TASK_IVLD_STATUS && mapped(slot) == NULL ? NONE_CODE : code;
  }
  if (strcmp(op, "report_launch") == 0)
    return streamMetaAddTaskLaunchResult(meta, tmpl->id.streamId, tmpl->id.taskId, 0, taosGetTimestampMs(), arg != 0);
  if (strcmp(op, "all_tasks_ready") == 0) return streamMetaAllTasksReady(meta);
  if (strcmp(op, "stop_all") == 0) return streamMetaStopAllTasks(meta);
  if (strcmp(op, "notify_close") == 0) {
    closing = true;
    streamMetaNotifyClose(meta);
    return 0;
  }
  if (strcmp(op, "clear") == 0) {
    /* as its one caller, the vnode's restart (tqCommon.c), calls it: once no task is in a
     * timer. Called at once, streamMetaClear frees tasks while it waits in tFreeStreamTask for
     * a timer, and the map still holds them: a view then reads freed memory. */
    while (streamMetaTaskInTimer(meta)) taosMsleep(100);
    streamMetaClear(meta);
    return 0;
  }
  if (strcmp(op, "reset_start_info") == 0) {
    streamMetaResetStartInfo(&meta->startInfo);
    return 0;
  }
  if (strcmp(op, "update_stage_role") == 0) { /* arg: stage * 2 + is_leader */
    streamMetaUpdateStageRole(meta, arg / 2, arg % 2 == 1);
    if (arg % 2 == 1) closing = false; /* an election as leader ends a notice of close */
    return meta->role;
  }
  if (strcmp(op, "advance_clock") == 0) {
    shimAdvanceClock(arg);
    return 0;
  }
  if (strcmp(op, "close_reopen") == 0) {
    streamMetaClose(meta);
    if (metaOpen() != 0) return -1;
    return streamMetaLoadAllTasks(meta);
  }
  if (strcmp(op, "fail_next") == 0) {
    shimTdbFailNext((EShimTdbOp)arg);
    return 0;
  }
  if (strcmp(op, "corrupt_record") == 0) { /* a torn write: the record's first 12 bytes */
    SStreamTask* t = recordOf(slot);
    SEncoder encoder;
    char buf[4096];
    tEncoderInit(&encoder, (uint8_t*)buf, sizeof(buf));
    tEncodeStreamTask(&encoder, t);
    int64_t key[2] = {t->id.streamId, t->id.taskId};
    tEncoderClear(&encoder);
    freeRecord(t);
    if (meta->txn == NULL)
      tdbBegin(meta->db, &meta->txn, tdbDefaultMalloc, tdbDefaultFree, NULL, TDB_TXN_WRITE | TDB_TXN_READ_UNCOMMITTED);
    tdbTbUpsert(meta->pTaskDb, key, sizeof(key), buf, 12, meta->txn);
    streamMetaCommit(meta);
    streamMetaClose(meta);
    if (metaOpen() != 0) return -1;
    return streamMetaLoadAllTasks(meta);
  }
  SStreamTask* t = mapped(slot);
  if (t == NULL) return NONE_CODE;
  if (strcmp(op, "handle_event") == 0 && arg == TASK_EVENT_PAUSE) {
    /* the vnode pauses a task by streamTaskPause (tqProcessTaskPauseReq), which counts it and
     * returns nothing; PAUSE has a row from every status in streamTaskSm.c's table, so the
     * event it handles is never refused when it returns (one that waits answers pending) */
    streamTaskPause(meta, t);
    return 0;
  }
  if (strcmp(op, "handle_event") == 0) return streamTaskHandleEvent(t->status.pSM, (EStreamTaskEvent)arg);
  if (strcmp(op, "complete_event") == 0 && t->outputInfo.type != TASK_OUTPUT__FIXED_DISPATCH)
    return TSDB_CODE_STREAM_INVALID_STATETRANS; /* nothing downstream: no check response comes (the
                                                 * C's INIT completes inside the event) */
  if (strcmp(op, "complete_event") == 0) { /* the downstream answers ready: the second phase */
    SStreamTaskCheckRsp rsp = {.reqId = t->checkReqId, .upstreamTaskId = t->id.taskId,
                               .status = TASK_DOWNSTREAM_READY};
    return streamProcessCheckRsp(t, &rsp);
  }
  if (strcmp(op, "resume") == 0) {
    streamTaskResume(t);
    return 0;
  }
  if (strcmp(op, "begin_checkpoint") == 0) { /* the checkpoint is recorded once the task is in it */
    int32_t code = streamTaskHandleEvent(t->status.pSM, TASK_EVENT_GEN_CHECKPOINT);
    if (code == 0) {
      t->chkInfo.checkpointingId = arg;
      t->chkInfo.transId = 1;
    }
    return code;
  }
  if (strcmp(op, "save_task") == 0) return streamMetaSaveTask(meta, t);
  if (strcmp(op, "start_task_timer") == 0) { /* the downstream re-check's timer: no reference */
    atomic_add_fetch_32(&t->status.timerActive, 1);
    taosTmrStart(taskTimerEnd, 100, t, streamTimer);
    return 0;
  }
  if (strcmp(op, "report_downstream_update") == 0) { /* addIntoNodeUpdateList, once per node */
    taosThreadMutexLock(&t->lock);
    bool queued = false;
    for (size_t i = 0; i < taosArrayGetSize(t->outputInfo.pDownstreamUpdateList); ++i)
      queued |= ((SDownstreamTaskEpset*)taosArrayGet(t->outputInfo.pDownstreamUpdateList, i))->nodeId == arg;
    if (!queued) {
      SDownstreamTaskEpset e = {.nodeId = (int32_t)arg};
      taosArrayPush(t->outputInfo.pDownstreamUpdateList, &e);
    }
    taosThreadMutexUnlock(&t->lock);
    return 0;
  }
  return NONE_CODE;
}


static const char* STATUS_NAMES[] = {"ready", "dropping", "uninit", "stop", "scan_history", "halt", "pause", "ck"};
static const char* EVENT_NAMES[] = {"", "init", "init_scanhist", "scanhist_done", "stop", "gen_checkpoint",
                                    "checkpoint_done", "pause", "resume", "halt", "dropping"};

static void printEvent(int32_t e) {
  if (e <= 0 || e >= (int32_t)tListLen(EVENT_NAMES)) printf("null");
  else printf("\"%s\"", EVENT_NAMES[e]);
}

static void printTask(SStreamTask* t) {
  SStreamTaskSM* sm = t->status.pSM;
  taosThreadMutexLock(&t->lock);
  printf("{\"id\":[%" PRId64 ",%d],\"status\":\"%s\",\"active\":", t->id.streamId, t->id.taskId,
         STATUS_NAMES[sm->current.state]);
  printEvent(sm->pActiveTrans == NULL ? 0 : (int32_t)sm->pActiveTrans->event);
  printf(",\"waiting\":[");
  for (size_t w = 0; w < taosArrayGetSize(sm->pWaitingEventList); ++w) {
    SAttachedEventInfo* e = taosArrayGet(sm->pWaitingEventList, w);
    printf("%s[\"%s\",", w ? "," : "", STATUS_NAMES[e->status]);
    printEvent((int32_t)e->event);
    printf("]");
  }
  taosThreadMutexUnlock(&t->lock);
  printf("],\"refcount\":%d,\"downstream_ready\":%s,\"timer_active\":%d", t->refCnt,
         t->status.downstreamReady ? "true" : "false", t->status.timerActive);
  printf(",\"next_process_ver\":%" PRId64 ",\"checkpointing_id\":%" PRId64 ",\"failed_checkpoint_id\":%" PRId64,
         t->chkInfo.nextProcessVer, t->chkInfo.checkpointingId, t->chkInfo.failedId);
  printf(",\"fill_history\":%s,\"trigger_param\":%" PRId64 ",\"h_task_id\":[%" PRId64 ",%" PRId64 "]",
         t->info.fillHistory ? "true" : "false", t->info.triggerParam, t->hTaskInfo.id.streamId, t->hTaskInfo.id.taskId);
  printf(",\"stream_task_id\":[%" PRId64 ",%" PRId64 "],\"persisted_status\":\"%s\"", t->streamTaskId.streamId,
         t->streamTaskId.taskId, STATUS_NAMES[t->status.taskStatus]);
  printf(",\"checkpoint_id\":%" PRId64 ",\"checkpoint_ver\":%" PRId64 "}", t->chkInfo.checkpointId,
         t->chkInfo.checkpointVer);
}

/* A set of the start round (a hash of ids, in no order): its ids in the task list's order,
 * then any not in the list. */
static void printIdSet(SHashObj* set) {
  printf("[");
  int32_t n = 0;
  for (size_t i = 0; i < taosArrayGetSize(meta->pTaskList); ++i) {
    SStreamTaskId* id = taosArrayGet(meta->pTaskList, i);
    STaskId key = {.streamId = id->streamId, .taskId = id->taskId};
    if (taosHashGet(set, &key, sizeof(key)) != NULL)
      printf("%s[%" PRId64 ",%" PRId64 "]", n++ ? "," : "", key.streamId, key.taskId);
  }
  for (void* p = taosHashIterate(set, NULL); p != NULL; p = taosHashIterate(set, p)) {
    STaskId* key = taosHashGetKey(p, NULL);
    bool listed = false;
    for (size_t i = 0; i < taosArrayGetSize(meta->pTaskList); ++i) {
      SStreamTaskId* id = taosArrayGet(meta->pTaskList, i);
      listed |= id->streamId == key->streamId && id->taskId == key->taskId;
    }
    if (!listed) printf("%s[%" PRId64 ",%" PRId64 "]", n++ ? "," : "", key->streamId, key->taskId);
  }
  printf("]");
}

static void cmdView2(void) {
  static const char* ROLES[] = {"?", "uninit", "leader", "follower"};
  printf("= {\"vg_id\":%d,\"stage\":%" PRId64 ",\"role\":\"%s\",\"ids\":[", meta->vgId, meta->stage,
         ROLES[meta->role]);
  for (size_t i = 0; i < taosArrayGetSize(meta->pTaskList); ++i) {
    SStreamTaskId* id = taosArrayGet(meta->pTaskList, i);
    printf("%s[%" PRId64 ",%d]", i ? "," : "", id->streamId, id->taskId);
  }
  printf("],\"map_ids\":[");
  int32_t n = 0;
  for (void* p = taosHashIterate(meta->pTasksMap, NULL); p != NULL; p = taosHashIterate(meta->pTasksMap, p)) {
    STaskId* key = taosHashGetKey(p, NULL);
    printf("%s[%" PRId64 ",%" PRId64 "]", n++ ? "," : "", key->streamId, key->taskId);
  }
  printf("],\"num_tasks\":%d,\"stream_count\":%d,\"paused_count\":%d,\"tasks\":[",
         (int32_t)taosArrayGetSize(meta->pTaskList), meta->numOfStreamTasks, meta->numOfPausedTasks);
  n = 0;
  for (size_t i = 0; i < taosArrayGetSize(meta->pTaskList); ++i) {
    SStreamTaskId* id = taosArrayGet(meta->pTaskList, i);
    STaskId key = {.streamId = id->streamId, .taskId = id->taskId};
    SStreamTask** pp = taosHashGet(meta->pTasksMap, &key, sizeof(key));
    if (pp == NULL) continue;
    if (n++) printf(",");
    printTask(*pp);
  }
  printf("],\"start_round\":{\"ready\":");
  printIdSet(meta->startInfo.pReadyTaskSet);
  printf(",\"failed\":");
  printIdSet(meta->startInfo.pFailedTaskSet);
  /* pHbInfo's first member is the heartbeat timer (streamMeta.c's SMetaHbInfo) */
  printf("},\"closing\":%s,\"heartbeat\":{\"armed\":%s}}\n", closing ? "true" : "false",
         shimTimerArmed(*(tmr_h*)meta->pHbInfo) ? "true" : "false");
}

static void cmdSent(void) {
  SArray* sent = shimTakeSent();
  printf("=");
  for (size_t i = 0; i < taosArrayGetSize(sent); ++i) {
    SShimSent* m = taosArrayGet(sent, i);
    if (m->msgType == TDMT_MND_STREAM_HEARTBEAT) {
      printf(" ");
      for (int32_t b = 0; b < m->contLen; ++b) printf("%02x", ((uint8_t*)m->pCont)[b]);
    }
    rpcFreeCont(m->pCont);
  }
  taosArrayDestroy(sent);
  printf("\n");
}

static void cmdMeta(char* rest) {
  SCall* c = calloc(1, sizeof(SCall));
  c->meta = true;
  c->slot = -1;
  int n = sscanf(rest, "%d %31s %" SCNd64, &c->slot, c->op, &c->arg);
  if (n < 2 || c->slot < -1 || c->slot >= MAX_SLOTS || (c->slot >= 0 && templates[c->slot] == NULL)) {
    printf("! bad mo line\n");
    free(c);
    return;
  }
  runCall(c);
}

/* -- the commands ----------------------------------------------------------------------- */
static int32_t eventOf(const char* name) {
  static const char* names[] = {"", "init", "init_scanhist", "scanhist_done", "stop", "gen_checkpoint",
                                "checkpoint_done", "pause", "resume", "halt", "dropping"};
  for (int32_t i = 1; i < (int32_t)tListLen(names); ++i)
    if (strcmp(names[i], name) == 0) return i;
  return NO_EVENT;
}

static void cmdTask(char* rest) {
  int32_t i, fill, dispatch;
  int64_t sid, tid, hsid, htid, ssid, stid, trigger;
  if (sscanf(rest, "%d %" SCNd64 " %" SCNd64 " %d %" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNd64 " %d %" SCNd64, &i,
             &sid, &tid, &fill, &hsid, &htid, &ssid, &stid, &dispatch, &trigger) != 10 ||
      i < 0 || i >= MAX_SLOTS) {
    printf("! bad task line\n");
    return;
  }
  SStreamTask* t = calloc(1, sizeof(SStreamTask));
  t->ver = SSTREAM_TASK_VER;
  t->id.streamId = sid;
  t->id.taskId = (int32_t)tid;
  t->info.taskLevel = TASK_LEVEL__SOURCE;
  t->info.fillHistory = (int8_t)fill;
  t->info.triggerParam = trigger;
  t->info.nodeId = 7;
  t->hTaskInfo.id.streamId = hsid;
  t->hTaskInfo.id.taskId = htid;
  t->streamTaskId.streamId = ssid;
  t->streamTaskId.taskId = stid;
  if (dispatch) { /* one downstream task, so init waits for its check */
    t->outputInfo.type = TASK_OUTPUT__FIXED_DISPATCH;
    t->outputInfo.fixedDispatcher.taskId = (int32_t)(tid + 1000);
    t->outputInfo.fixedDispatcher.nodeId = 8;
  } else {
    t->outputInfo.type = TASK_OUTPUT__TABLE;
  }
  if (level == 1) {
    t->upstreamInfo.pList = taosArrayInit(1, POINTER_BYTES);
    slots[i] = t;
    printf("= %d\n", streamTaskInit(t, meta, &msgCb, 1));
    return;
  }
  templates[i] = t; /* the meta's tasks are copies of it, registered or loaded */
  handles[i] = taosArrayInit(4, POINTER_BYTES);
  printf("= 0\n");
}

static void cmdSm(char* rest) {
  SCall* c = calloc(1, sizeof(SCall));
  char event[32] = "";
  int n = sscanf(rest, "%d %31s %31s", &c->slot, c->op, event);
  c->event = n == 3 ? eventOf(event) : 0;
  if (n < 2 || c->slot < 0 || c->slot >= MAX_SLOTS || slots[c->slot] == NULL || c->event == NO_EVENT) {
    printf("! bad sm line\n");
    free(c);
    return;
  }
  runCall(c);
}

static void cmdView1(void) {
  printf("= v");
  for (int32_t i = 0; i < MAX_SLOTS; ++i) {
    SStreamTask* t = slots[i];
    if (t == NULL) continue;
    taosThreadMutexLock(&t->lock);
    SStreamTaskSM* sm = t->status.pSM;
    int32_t active = sm->pActiveTrans == NULL ? 0 : (int32_t)sm->pActiveTrans->event;
    printf(" | %d %d %d %d %d %d", i, sm->current.state, active, sm->prev.state.state, (int32_t)sm->prev.evt,
           (int32_t)taosArrayGetSize(sm->pWaitingEventList));
    for (size_t w = 0; w < taosArrayGetSize(sm->pWaitingEventList); ++w) {
      SAttachedEventInfo* e = taosArrayGet(sm->pWaitingEventList, w);
      printf(" %d %d", e->status, e->event);
    }
    taosThreadMutexUnlock(&t->lock);
  }
  printf("\n");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  char line[4096];
  while (fgets(line, sizeof(line), stdin) != NULL) {
    line[strcspn(line, "\n")] = 0;
    char* rest = strchr(line, ' ');
    rest = rest == NULL ? line + strlen(line) : rest + 1;
    if (strncmp(line, "meta ", 5) == 0) { /* meta LEVEL DIR */
      streamMetaInit();
      sscanf(rest, "%d %4095s", &level, metaPath);
      printf("= %d\n", metaOpen());
    } else if (strncmp(line, "task ", 5) == 0) {
      cmdTask(rest);
    } else if (strncmp(line, "sm ", 3) == 0) {
      cmdSm(rest);
    } else if (strncmp(line, "mo ", 3) == 0) {
      cmdMeta(rest);
    } else if (strcmp(line, "view2") == 0) {
      cmdView2();
    } else if (strcmp(line, "sent") == 0) {
      cmdSent();
    } else if (strcmp(line, "view1") == 0) {
      cmdView1();
    } else if (strcmp(line, "quit") == 0) {
      break;
    } else {
      printf("! unknown command\n");
    }
  }
  fflush(stdout);
  _exit(0); /* calls still waiting stay so; no teardown races them */
}
