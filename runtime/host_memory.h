// Large host buffers straight from the system: tensors, packed weights,
// arena segments. A buffer of kHostMapBytes or more is a mapping of its own,
// zeroed by the kernel and given back whole when freed; a smaller one comes
// from malloc (64-byte aligned). malloc would keep freed memory for reuse,
// and once it has freed a large block it serves blocks up to that size from
// its heap, where a freed one in the middle stays with the process: the
// tuner's candidate kernels (each with its own packed weights) and a load's
// transient copies would leave the process holding what it no longer uses.
//
//   bool zeroed = false;
//   void* p = host_alloc(bytes, &zeroed);   // null when the system refuses
//   host_free(p, bytes);                    // the same size it was asked with
#pragma once

#include <cstddef>

namespace minirt {

constexpr size_t kHostMapBytes = size_t{256} << 10;

// At least `bytes` (rounded up to 64), 64-byte aligned; `zeroed` (when not
// null) says whether the memory is known to be zero. `populate`: the caller
// writes all of it at once (packed weights), so a mapping is made with its
// pages (one call into the kernel, not a fault per page). Null when refused.
void* host_alloc(size_t bytes, bool* zeroed = nullptr, bool populate = false);
// Frees what host_alloc(bytes) returned; null is ignored.
void host_free(void* p, size_t bytes);

}  // namespace minirt
