/* tdb as the meta uses it: named tables of byte keys in memcmp order under one directory, one
 * open transaction at a time, and committed state that survives a close, a reopen of the same
 * path and a crash. Each table's committed rows live in PATH/NAME.rows, replaced atomically
 * (write then rename) at commit; uncommitted writes live in memory only, so a process that
 * dies mid-transaction reopens with the last commit. Faults: shimTdbFailNext(op) makes the
 * next call of begin, put, delete or commit fail (see driver.c). */
#include <errno.h>
#include <sys/stat.h>
#include "shim.h"

typedef struct SRow {
  int32_t kLen, vLen;
  char* key;
  char* val;
} SRow;

struct TTB {
  char name[128];
  TDB* db;
  SArray* rows; /* SArray<SRow>, sorted by memcmp of the key, shorter first on a tie */
  TTB* next;
};

struct TDB {
  char path[TD_PATH_MAX];
  TTB* tables;
  TXN* txn;
};

struct TXN {
  int flags;
};

struct TBC {
  TTB* tb;
  size_t pos;
};

static int32_t failNext[SHIM_TDB_OPS];

void shimTdbFailNext(EShimTdbOp op) { failNext[op] += 1; }

static bool faulted(EShimTdbOp op) {
  if (failNext[op] == 0) return false;
  failNext[op] -= 1;
  return true;
}

static int rowCmp(const void* k1, int32_t l1, const void* k2, int32_t l2) {
  int c = memcmp(k1, k2, (size_t)TMIN(l1, l2));
  return c != 0 ? c : (l1 > l2) - (l1 < l2);
}

static void rowsFree(SArray* rows) {
  for (size_t i = 0; i < taosArrayGetSize(rows); ++i) {
    SRow* r = taosArrayGet(rows, i);
    free(r->key);
    free(r->val);
  }
  taosArrayClear(rows);
}

static void tablePath(const TTB* tb, char* buf, size_t len) { snprintf(buf, len, "%s/%s.rows", tb->db->path, tb->name); }

static void tableLoad(TTB* tb) {
  rowsFree(tb->rows);
  char file[TD_PATH_MAX + 160];
  tablePath(tb, file, sizeof(file));
  FILE* f = fopen(file, "rb");
  if (f == NULL) return;
  SRow r;
  while (fread(&r.kLen, sizeof(int32_t), 1, f) == 1 && fread(&r.vLen, sizeof(int32_t), 1, f) == 1) {
    r.key = malloc((size_t)r.kLen);
    r.val = malloc((size_t)r.vLen);
    if (fread(r.key, 1, (size_t)r.kLen, f) != (size_t)r.kLen || fread(r.val, 1, (size_t)r.vLen, f) != (size_t)r.vLen) {
      free(r.key), free(r.val);
      break;
    }
    taosArrayPush(tb->rows, &r);
  }
  fclose(f);
}

static int32_t tableSave(TTB* tb) {
  char file[TD_PATH_MAX + 160], tmp[TD_PATH_MAX + 170];
  tablePath(tb, file, sizeof(file));
  snprintf(tmp, sizeof(tmp), "%s.tmp", file);
  FILE* f = fopen(tmp, "wb");
  if (f == NULL) return -1;
  for (size_t i = 0; i < taosArrayGetSize(tb->rows); ++i) {
    SRow* r = taosArrayGet(tb->rows, i);
    fwrite(&r->kLen, sizeof(int32_t), 1, f);
    fwrite(&r->vLen, sizeof(int32_t), 1, f);
    fwrite(r->key, 1, (size_t)r->kLen, f);
    fwrite(r->val, 1, (size_t)r->vLen, f);
  }
  if (fclose(f) != 0) return -1;
  return rename(tmp, file);
}

/* mkdir -p, as tdb makes its directory with its parents */
static int32_t makeDirs(const char* path) {
  char buf[TD_PATH_MAX];
  snprintf(buf, sizeof(buf), "%s", path);
  for (char* p = buf + 1; *p != 0; ++p) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

int32_t tdbOpen(const char* dbname, int pageSize, int cacheSize, TDB** ppDb, int8_t rollback) {
  (void)pageSize, (void)cacheSize, (void)rollback;
  if (makeDirs(dbname) != 0) return -1;
  TDB* db = calloc(1, sizeof(TDB));
  snprintf(db->path, sizeof(db->path), "%s", dbname);
  *ppDb = db;
  return 0;
}

int32_t tdbClose(TDB* db) {
  if (db == NULL) return 0;
  memset(failNext, 0, sizeof(failNext)); /* a planned fault belongs to the open store */
  free(db->txn);
  free(db);
  return 0;
}

int32_t tdbTbOpen(const char* tbname, int keyLen, int valLen, tdb_cmpr_fn_t keyCmprFn, TDB* db, TTB** ppTb,
                  int8_t rollback) {
  (void)keyLen, (void)valLen, (void)keyCmprFn, (void)rollback;
  TTB* tb = calloc(1, sizeof(TTB));
  snprintf(tb->name, sizeof(tb->name), "%s", tbname);
  tb->db = db;
  tb->rows = taosArrayInit(8, sizeof(SRow));
  tb->next = db->tables;
  db->tables = tb;
  tableLoad(tb);
  *ppTb = tb;
  return 0;
}

int32_t tdbTbClose(TTB* tb) {
  if (tb == NULL) return 0;
  for (TTB** p = &tb->db->tables; *p != NULL; p = &(*p)->next) {
    if (*p == tb) {
      *p = tb->next;
      break;
    }
  }
  rowsFree(tb->rows);
  taosArrayDestroy(tb->rows);
  free(tb);
  return 0;
}

/* The index of the first row whose key is not less than KEY. */
static size_t lowerBound(TTB* tb, const void* key, int32_t kLen) {
  size_t lo = 0, hi = taosArrayGetSize(tb->rows);
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    SRow* r = taosArrayGet(tb->rows, mid);
    if (rowCmp(r->key, r->kLen, key, kLen) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static SRow* findRow(TTB* tb, const void* key, int32_t kLen, size_t* at) {
  *at = lowerBound(tb, key, kLen);
  SRow* r = taosArrayGet(tb->rows, *at);
  return r != NULL && rowCmp(r->key, r->kLen, key, kLen) == 0 ? r : NULL;
}

int32_t tdbTbUpsert(TTB* tb, const void* pKey, int nKey, const void* pVal, int nVal, TXN* txn) {
  if (txn == NULL || faulted(SHIM_TDB_PUT)) return -1;
  size_t at;
  SRow* r = findRow(tb, pKey, nKey, &at);
  char* val = malloc((size_t)nVal);
  memcpy(val, pVal, (size_t)nVal);
  if (r != NULL) {
    free(r->val);
    r->val = val;
    r->vLen = nVal;
    return 0;
  }
  SRow row = {.kLen = nKey, .vLen = nVal, .key = malloc((size_t)nKey), .val = val};
  memcpy(row.key, pKey, (size_t)nKey);
  taosArrayPush(tb->rows, &row);
  char* base = tb->rows->pData;
  memmove(base + (at + 1) * sizeof(SRow), base + at * sizeof(SRow), (tb->rows->size - at - 1) * sizeof(SRow));
  memcpy(base + at * sizeof(SRow), &row, sizeof(SRow));
  return 0;
}

int32_t tdbTbDelete(TTB* tb, const void* pKey, int kLen, TXN* txn) {
  if (txn == NULL || faulted(SHIM_TDB_DELETE)) return -1;
  size_t at;
  SRow* r = findRow(tb, pKey, kLen, &at);
  if (r == NULL) return -1;
  free(r->key);
  free(r->val);
  taosArrayRemove(tb->rows, at);
  return 0;
}

int32_t tdbTbGet(TTB* tb, const void* pKey, int kLen, void** ppVal, int* vLen) {
  size_t at;
  SRow* r = findRow(tb, pKey, kLen, &at);
  if (r == NULL) return -1;
  *ppVal = malloc((size_t)r->vLen);
  memcpy(*ppVal, r->val, (size_t)r->vLen);
  *vLen = r->vLen;
  return 0;
}

int32_t tdbTbcOpen(TTB* tb, TBC** ppTbc, TXN* txn) {
  (void)txn;
  TBC* c = calloc(1, sizeof(TBC));
  c->tb = tb;
  *ppTbc = c;
  return 0;
}

int32_t tdbTbcMoveToFirst(TBC* c) {
  c->pos = 0;
  return 0;
}

/* Like tdb's: each call reallocates *ppKey and *ppVal, which the caller frees with tdbFree. */
int32_t tdbTbcNext(TBC* c, void** ppKey, int* kLen, void** ppVal, int* vLen) {
  SRow* r = taosArrayGet(c->tb->rows, c->pos);
  if (r == NULL) return -1;
  c->pos += 1;
  *ppKey = realloc(*ppKey, (size_t)r->kLen);
  memcpy(*ppKey, r->key, (size_t)r->kLen);
  *kLen = r->kLen;
  *ppVal = realloc(*ppVal, (size_t)r->vLen);
  memcpy(*ppVal, r->val, (size_t)r->vLen);
  *vLen = r->vLen;
  return 0;
}

int32_t tdbTbcClose(TBC* c) {
  free(c);
  return 0;
}

int32_t tdbBegin(TDB* db, TXN** pTxn, void* (*xMalloc)(void*, size_t), void (*xFree)(void*, void*), void* xArg,
                 int flags) {
  (void)xMalloc, (void)xFree, (void)xArg;
  if (db->txn != NULL || faulted(SHIM_TDB_BEGIN)) return -1;
  db->txn = calloc(1, sizeof(TXN));
  db->txn->flags = flags;
  *pTxn = db->txn;
  return 0;
}

int32_t tdbCommit(TDB* db, TXN* txn) {
  if (txn == NULL || txn != db->txn || faulted(SHIM_TDB_COMMIT)) return -1;
  for (TTB* tb = db->tables; tb != NULL; tb = tb->next) {
    if (tableSave(tb) != 0) return -1;
  }
  return 0;
}

int32_t tdbPostCommit(TDB* db, TXN* txn) {
  if (txn == NULL || txn != db->txn) return -1;
  free(db->txn);
  db->txn = NULL;
  return 0;
}

/* An abort drops what the transaction wrote: every table goes back to its last commit. */
int32_t tdbAbort(TDB* db, TXN* txn) {
  if (txn == NULL || txn != db->txn) return -1;
  for (TTB* tb = db->tables; tb != NULL; tb = tb->next) tableLoad(tb);
  free(db->txn);
  db->txn = NULL;
  return 0;
}

void tdbFree(void* p) { free(p); }
void* tdbDefaultMalloc(void* arg, size_t size) {
  (void)arg;
  return malloc(size);
}
void tdbDefaultFree(void* arg, void* ptr) {
  (void)arg;
  free(ptr);
}
