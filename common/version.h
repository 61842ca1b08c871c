/* Versions of everything that crosses a process boundary. */

#ifndef DYNPROF_VERSION_H
#define DYNPROF_VERSION_H

#define DYNPROF_VERSION_STRING	"0.1.0"

/* AgentLink protocol version in Hello and Welcome: bump when proto/dynprof.proto
 * changes in a way an older peer would misread. */
#define PROTOCOL_VERSION	1

#endif /* DYNPROF_VERSION_H */
