// minirt/export.h: marks the symbols libminirt.so exports. Everything else in
// the shared library is hidden (built with -fvisibility=hidden).
#pragma once

#if defined(_WIN32)
#define MINIRT_API
#else
#define MINIRT_API __attribute__((visibility("default")))
#endif
