/*
 * The protobuf layer of the profiler options (options.h): where
 * Dynprof__V1__ProfilerOptions keeps each row.  In the daemons' library only:
 * libdynprof never sees protobuf-c.
 */

#include "dynprof.pb-c.h"
#include "options.h"

const struct options_layer options_proto =
    OPTIONS_LAYER("protobuf", Dynprof__V1__ProfilerOptions);
