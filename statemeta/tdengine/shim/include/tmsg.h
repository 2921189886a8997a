/* statemeta stub header: the types live in shim.h; TDengine's tmsg.h brings the encoder, and
 * the message codecs the task record calls. */
#include "shim.h"
#include "tencode.h"
#ifndef STATEMETA_SHIM_TMSG_H
#define STATEMETA_SHIM_TMSG_H
int32_t tEncodeSEpSet(SEncoder* pEncoder, const SEpSet* pEp);
int32_t tDecodeSEpSet(SDecoder* pDecoder, SEpSet* pEp);
int32_t tEncodeSSchemaWrapper(SEncoder* pEncoder, const SSchemaWrapper* pSW);
int32_t tDecodeSSchemaWrapper(SDecoder* pDecoder, SSchemaWrapper* pSW);
void tDeleteSchemaWrapper(SSchemaWrapper* pSchemaWrapper);
int32_t tSerializeSUseDbRspImp(SEncoder* pEncoder, const SUseDbRsp* pRsp);
int32_t tDeserializeSUseDbRspImp(SDecoder* pDecoder, SUseDbRsp* pRsp);
#endif
