// SPDX-License-Identifier: MIT
/* ir.h: dtopt's core IR, the one header the rest of the project includes:
 * support.h (allocator, arena, vectors, interning, diagnostics), mesh.h
 * (meshes, groups with their CuTe-style layout algebra, placements) and
 * graph.h (the module/graph/node SSA representation, tensor metadata, the
 * op table, verification and printing). */
#ifndef DTOPT_IR_H
#define DTOPT_IR_H

#include "support.h"
#include "mesh.h"
#include "graph.h"

#endif
