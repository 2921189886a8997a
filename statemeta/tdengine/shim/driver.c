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
 *
 * A call answers when it returns, or "pending" as soon as it waits in a sleep loop of the C
 * (an attached event waiting for its status): the wait goes on, on its thread, and shows in a
 * later view. A sanitizer report or a failed ASSERT ends the process; its stderr says why. */
#include <unistd.h>
#include "shim.h"
#include "streamInt.h"
#include "streamsm.h"

#define MAX_SLOTS 16
#define NO_EVENT (-1)

static SStreamMeta* meta = NULL;
static SStreamTask* slots[MAX_SLOTS];
static SMsgCb msgCb;

/* -- a call on its own thread, answered when it returns or when it starts waiting --------- */
typedef struct SCall {
  char op[32];
  int32_t slot;
  int32_t event;
  int32_t code;
  bool done, waiting;
} SCall;

static pthread_mutex_t callLock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t callCond = PTHREAD_COND_INITIALIZER;
static __thread SCall* current = NULL;

/* Called by the shim's sleep: the calling thread is in a wait loop of the C. */
void shimOnWait(void) {
  if (current == NULL) return;
  pthread_mutex_lock(&callLock);
  current->waiting = true;
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
  int32_t code = smCall(c);
  pthread_mutex_lock(&callLock);
  c->code = code;
  c->done = true;
  bool answered = c->waiting;
  pthread_cond_broadcast(&callCond);
  pthread_mutex_unlock(&callLock);
  if (answered) free(c); /* answered as pending: nobody waits for this return */
  return NULL;
}

static void runCall(SCall* c) {
  pthread_t th;
  pthread_create(&th, NULL, callThread, c);
  pthread_detach(th);
  pthread_mutex_lock(&callLock);
  while (!c->done && !c->waiting) pthread_cond_wait(&callCond, &callLock);
  bool done = c->done;
  int32_t code = c->code;
  pthread_mutex_unlock(&callLock);
  if (done) {
    printf("= %d\n", code);
    free(c);
  } else {
    printf("= pending\n");
  }
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
  t->upstreamInfo.pList = taosArrayInit(1, POINTER_BYTES);
  int32_t code = streamTaskInit(t, meta, &msgCb, 1);
  slots[i] = t;
  printf("= %d\n", code);
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
    if (strncmp(line, "meta ", 5) == 0) {
      streamMetaInit();
      meta = streamMetaOpen(rest, NULL, NULL, 7, -1, NULL);
      printf("= %d\n", meta == NULL ? -1 : 0);
    } else if (strncmp(line, "task ", 5) == 0) {
      cmdTask(rest);
    } else if (strncmp(line, "sm ", 3) == 0) {
      cmdSm(rest);
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
