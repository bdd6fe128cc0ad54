/*
 * analyzer.h - transitional: the model's headers and those below them, for
 * the files not yet including what they use (issue 16).
 *
 * Included by: nothing new.
 */
#ifndef GPUSHIM_ANALYZER_H
#define GPUSHIM_ANALYZER_H

#include "gpushim_ring.h"
#include "gpushim_trace.h"
#include "analyzer/trace/trace.h"
#include "analyzer/util/cursor.h"
#include "analyzer/util/idmap.h"
#include "analyzer/util/ordmap.h"
#include "analyzer/util/reserve.h"
#include "analyzer/util/text.h"
#include "analyzer/model/model.h"
#include "analyzer/model/model_int.h"
#include "analyzer/read/checkpoint_load.h"
#include "analyzer/findings/growth.h"
#include "analyzer/findings/oom.h"

#endif
