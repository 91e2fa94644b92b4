# kernels/cuda/: the GPU backend, built as a module (libminirt_cuda.so) that
# the runtime loads at run time (runtime/gpu/module.h), so that libminirt.so,
# runmodel and every other tool link no CUDA library. Included from the
# top-level CMakeLists.txt after runtime/gpu/gpu_gate.cmake, whose results it
# uses: MINIRT_GPU_BACKEND, MINIRT_CUDA_ARCHITECTURES, MINIRT_CUDNN_INCLUDE_DIR.
#
# The module links the CUDA runtime statically (CUDA::cudart_static, which
# loads libcuda.so.1 itself when first used; never -lcuda), cuDNN and cuBLAS
# dynamically (their sonames then bind to the files the compatibility gate
# loaded), and its own copy of minirt_core, kept local by exports.map.
#
# Not built: when the gate found no CUDA toolkit or cuDNN headers (the loader
# then says the module is missing), and in sanitizer or fuzzing builds
# (MINIRT_SANITIZE, MINIRT_FUZZ): their instrumentation flags are added to
# every compile, which nvcc does not take, and an uninstrumented module
# inside an instrumented process would only be tested on a GPU machine.

# The loader is part of the core whether or not the module is built.
target_sources(minirt_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../../runtime/gpu/module.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../../runtime/gpu/module_provider.cpp)

set(MINIRT_CUDA_MODULE OFF)
if(NOT MINIRT_GPU_BACKEND)
  message(STATUS "GPU module: not built (${MINIRT_GPU_BUILD_WHY_NOT})")
  return()
endif()
if(MINIRT_SANITIZE OR MINIRT_FUZZ)
  message(STATUS "GPU module: not built in sanitizer and fuzzing builds (nvcc does not take their flags)")
  return()
endif()

find_library(MINIRT_CUDNN_LIBRARY NAMES cudnn libcudnn.so.9
  HINTS ${MINIRT_CUDNN_INCLUDE_DIR}/../lib ${MINIRT_CUDNN_INCLUDE_DIR}/../lib64 ${CUDAToolkit_LIBRARY_DIR}
    ENV CUDNN_ROOT ENV CUDNN_PATH
  PATH_SUFFIXES lib lib64
  DOC "cuDNN's library the GPU module links (libcudnn.so.9)")
if(NOT MINIRT_CUDNN_LIBRARY)
  message(WARNING "GPU module: not built (cuDNN's headers are in ${MINIRT_CUDNN_INCLUDE_DIR} but libcudnn.so was not "
                  "found; set MINIRT_CUDNN_LIBRARY)")
  return()
endif()

# nvcc compiles the .cu files with the C++ compiler as host compiler when it
# is GCC; with clang (the sanitizer builds, which skip the module anyway)
# nvcc keeps its default host compiler.
if(NOT CMAKE_CUDA_HOST_COMPILER AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(CMAKE_CUDA_HOST_COMPILER ${CMAKE_CXX_COMPILER})
endif()
if(NOT CMAKE_CUDA_COMPILER AND CUDAToolkit_NVCC_EXECUTABLE)
  set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
endif()
set(CMAKE_CUDA_ARCHITECTURES ${MINIRT_CUDA_ARCHITECTURES})
enable_language(CUDA)
set(MINIRT_CUDA_MODULE ON)

set(_dir ${CMAKE_CURRENT_LIST_DIR})
add_library(minirt_cuda MODULE
  ${_dir}/backend.cpp
  ${_dir}/module_table.cpp
  ${_dir}/common.cpp
  ${_dir}/support.cpp
  ${_dir}/registry.cpp
  ${_dir}/dnn_ops.cpp
  ${_dir}/blas_ops.cpp
  ${_dir}/simple_ops.cpp
  ${_dir}/elementwise.cu
  ${_dir}/movement.cu)
set_target_properties(minirt_cuda PROPERTIES
  PREFIX lib
  OUTPUT_NAME minirt_cuda
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib
  CUDA_ARCHITECTURES "${MINIRT_CUDA_ARCHITECTURES}"
  CUDA_STANDARD 17
  CUDA_STANDARD_REQUIRED ON
  CUDA_RUNTIME_LIBRARY None
  CXX_VISIBILITY_PRESET hidden
  CUDA_VISIBILITY_PRESET hidden
  VISIBILITY_INLINES_HIDDEN ON
  # No run path: cuDNN and cuBLAS bind to what the gate loaded, or to the loader's search.
  SKIP_BUILD_RPATH ON
  INSTALL_RPATH "")
# cuDNN's headers first: /usr/local/cuda/include may hold another cuDNN's.
target_include_directories(minirt_cuda BEFORE PRIVATE ${MINIRT_CUDNN_INCLUDE_DIR})
target_include_directories(minirt_cuda PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/runtime/include)
# minirt_core's objects without its usage requirements (its compile flags are for the host compiler only).
add_dependencies(minirt_cuda minirt_core)
target_link_libraries(minirt_cuda PRIVATE $<TARGET_FILE:minirt_core> CUDA::cudart_static ${MINIRT_CUDNN_LIBRARY}
  CUDA::cublas Threads::Threads ${CMAKE_DL_LIBS})
# The project's warnings for the module's C++; for nvcc, the host compiler's
# warnings through -Xcompiler (nvcc's own "deprecated architecture" notes are
# silenced: the list is the gate's).
target_compile_options(minirt_cuda PRIVATE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-unused-parameter -Wno-deprecated-gpu-targets>)
if(MINIRT_WERROR)
  target_compile_options(minirt_cuda PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>
    $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Werror>)
endif()
# The headers it was compiled against must be the ones the gate's build facts name.
target_compile_definitions(minirt_cuda PRIVATE MINIRT_EXPECT_CUDNN="${MINIRT_GPU_BUILD_CUDNN}")
target_link_options(minirt_cuda PRIVATE -Wl,--version-script=${_dir}/exports.map -Wl,--no-undefined)
set_property(TARGET minirt_cuda APPEND PROPERTY LINK_DEPENDS ${_dir}/exports.map)
install(TARGETS minirt_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
message(STATUS "GPU module: libminirt_cuda.so for ${MINIRT_CUDA_ARCHITECTURES}, cuDNN ${MINIRT_CUDNN_LIBRARY}")
