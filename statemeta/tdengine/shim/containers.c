/* taosArray and taosHash as TDengine's callers rely on them: an array of fixed-size elements
 * whose pop takes the last one, and a hash that copies key and value, refuses a duplicate key
 * when made without update, and iterates by handing out pointers to its stored values. */
#include "shim.h"

SArray* taosArrayInit(size_t size, size_t elemSize) {
  SArray* a = calloc(1, sizeof(SArray));
  a->capacity = size > 0 ? size : 4;
  a->elemSize = elemSize;
  a->pData = calloc(a->capacity, elemSize);
  return a;
}

static void arrayGrow(SArray* a, size_t need) {
  if (need <= a->capacity) return;
  size_t cap = a->capacity * 2;
  while (cap < need) cap *= 2;
  a->pData = realloc(a->pData, cap * a->elemSize);
  a->capacity = cap;
}

void* taosArrayPush(SArray* a, const void* pData) {
  if (a == NULL) return NULL;
  arrayGrow(a, a->size + 1);
  void* dst = (char*)a->pData + a->size * a->elemSize;
  if (pData != NULL) memcpy(dst, pData, a->elemSize);
  a->size += 1;
  return dst;
}

void* taosArrayReserve(SArray* a, int32_t num) {
  arrayGrow(a, a->size + (size_t)num);
  void* dst = (char*)a->pData + a->size * a->elemSize;
  memset(dst, 0, (size_t)num * a->elemSize);
  a->size += (size_t)num;
  return dst;
}

void* taosArrayPop(SArray* a) {
  if (a == NULL || a->size == 0) return NULL;
  a->size -= 1;
  return (char*)a->pData + a->size * a->elemSize;
}

void* taosArrayGet(const SArray* a, size_t index) {
  if (a == NULL || index >= a->size) return NULL;
  return (char*)a->pData + index * a->elemSize;
}

void* taosArrayGetP(const SArray* a, size_t index) {
  void** p = taosArrayGet(a, index);
  return p == NULL ? NULL : *p;
}

void* taosArrayGetLast(const SArray* a) { return a == NULL || a->size == 0 ? NULL : taosArrayGet(a, a->size - 1); }

size_t taosArrayGetSize(const SArray* a) { return a == NULL ? 0 : a->size; }

void taosArrayRemove(SArray* a, size_t index) {
  if (a == NULL || index >= a->size) return;
  char* base = a->pData;
  memmove(base + index * a->elemSize, base + (index + 1) * a->elemSize, (a->size - index - 1) * a->elemSize);
  a->size -= 1;
}

void taosArrayClear(SArray* a) {
  if (a != NULL) a->size = 0;
}

void* taosArrayDestroy(SArray* a) {
  if (a != NULL) {
    free(a->pData);
    free(a);
  }
  return NULL;
}

void taosArrayDestroyP(SArray* a, FDelete fp) {
  for (size_t i = 0; i < taosArrayGetSize(a); ++i) fp(taosArrayGetP(a, i));
  taosArrayDestroy(a);
}

void taosArrayDestroyEx(SArray* a, FDelete fp) {
  if (fp != NULL)
    for (size_t i = 0; i < taosArrayGetSize(a); ++i) fp(taosArrayGet(a, i));
  taosArrayDestroy(a);
}

SArray* taosArrayDup(const SArray* src, void* (*fn)(void*)) {
  if (src == NULL) return NULL;
  SArray* a = taosArrayInit(src->size, src->elemSize);
  for (size_t i = 0; i < src->size; ++i) {
    void* item = taosArrayGet(src, i);
    if (fn != NULL) {
      void* copy = fn(*(void**)item);
      taosArrayPush(a, &copy);
    } else {
      taosArrayPush(a, item);
    }
  }
  return a;
}

void* taosArrayAddAll(SArray* a, const SArray* in) {
  for (size_t i = 0; i < taosArrayGetSize(in); ++i) taosArrayPush(a, taosArrayGet(in, i));
  return a->pData;
}

void taosArraySort(SArray* a, int (*compar)(const void*, const void*)) { qsort(a->pData, a->size, a->elemSize, compar); }

/* The hash keeps its nodes in insertion order in a list: the meta's maps hold a few tasks, so a
 * linear search is fast enough and gives a deterministic iteration order. A value pointer
 * handed out stays valid until its key is removed, as TDengine's does. */
typedef struct SHashNode {
  struct SHashNode* next;
  size_t keyLen;
  size_t dataLen;
  char* key;
  char data[];
} SHashNode;

struct SHashObj {
  SHashNode* head;
  int32_t size;
  bool update;
  FDelete freeFp;
};

static uint32_t defaultHash(const char* key, uint32_t len) {
  uint32_t h = 2166136261u;
  for (uint32_t i = 0; i < len; ++i) h = (h ^ (uint8_t)key[i]) * 16777619u;
  return h;
}

_hash_fn_t taosGetDefaultHashFunction(int32_t type) {
  (void)type;
  return defaultHash;
}

SHashObj* taosHashInit(size_t capacity, _hash_fn_t fn, bool update, SHashLockTypeE type) {
  (void)capacity, (void)fn, (void)type;
  SHashObj* h = calloc(1, sizeof(SHashObj));
  h->update = update;
  return h;
}

static SHashNode** hashFind(SHashObj* h, const void* key, size_t keyLen) {
  SHashNode** p = &h->head;
  while (*p != NULL && ((*p)->keyLen != keyLen || memcmp((*p)->key, key, keyLen) != 0)) p = &(*p)->next;
  return p;
}

static void hashFreeNode(SHashObj* h, SHashNode* n) {
  if (h->freeFp != NULL) h->freeFp(n->data);
  free(n->key);
  free(n);
}

int32_t taosHashPut(SHashObj* h, const void* key, size_t keyLen, const void* data, size_t size) {
  if (h == NULL) return -1;
  SHashNode** p = hashFind(h, key, keyLen);
  if (*p != NULL && !h->update) {
    terrno = TSDB_CODE_DUP_KEY;
    return -1;
  }
  SHashNode* n = calloc(1, sizeof(SHashNode) + size);
  n->key = malloc(keyLen);
  memcpy(n->key, key, keyLen);
  n->keyLen = keyLen;
  n->dataLen = size;
  if (data != NULL) memcpy(n->data, data, size);
  if (*p != NULL) { /* update in place of the old node, keeping the order */
    n->next = (*p)->next;
    hashFreeNode(h, *p);
    *p = n;
  } else {
    *p = n;
    h->size += 1;
  }
  return 0;
}

void* taosHashGet(SHashObj* h, const void* key, size_t keyLen) {
  if (h == NULL) return NULL;
  SHashNode* n = *hashFind(h, key, keyLen);
  return n == NULL ? NULL : n->data;
}

int32_t taosHashRemove(SHashObj* h, const void* key, size_t keyLen) {
  if (h == NULL) return -1;
  SHashNode** p = hashFind(h, key, keyLen);
  if (*p == NULL) return -1;
  SHashNode* n = *p;
  *p = n->next;
  hashFreeNode(h, n);
  h->size -= 1;
  return 0;
}

int32_t taosHashGetSize(const SHashObj* h) { return h == NULL ? 0 : h->size; }

void taosHashClear(SHashObj* h) {
  if (h == NULL) return;
  while (h->head != NULL) {
    SHashNode* n = h->head;
    h->head = n->next;
    hashFreeNode(h, n);
  }
  h->size = 0;
}

void taosHashCleanup(SHashObj* h) {
  taosHashClear(h);
  free(h);
}

static SHashNode* nodeOf(void* data) { return (SHashNode*)((char*)data - offsetof(SHashNode, data)); }

void* taosHashIterate(SHashObj* h, void* p) {
  if (h == NULL) return NULL;
  SHashNode* n = p == NULL ? h->head : nodeOf(p)->next;
  return n == NULL ? NULL : n->data;
}

void taosHashCancelIterate(SHashObj* h, void* p) { (void)h, (void)p; }

void* taosHashGetKey(void* data, size_t* keyLen) {
  SHashNode* n = nodeOf(data);
  if (keyLen != NULL) *keyLen = n->keyLen;
  return n->key;
}

void taosHashSetFreeFp(SHashObj* h, FDelete fp) { h->freeFp = fp; }
