# The startup compatibility gate (runtime/gpu/): its sources go into
# minirt_core, and the facts of this build it judges against are found here,
# at configure time, and written into build_facts.h. The gate links no CUDA
# library and includes no CUDA header: it loads the libraries at run time.
#
# Results for the GPU module (kernels/cuda/) to use too, so that what the gate
# expects and what the module is built with are one thing:
#   MINIRT_GPU_BACKEND         ON when the CUDA toolkit and cuDNN's headers were found
#   MINIRT_CUDA_ARCHITECTURES  the CUDA_ARCHITECTURES to compile the module for
#   MINIRT_CUDNN_INCLUDE_DIR   the folder holding cudnn_version.h

set(MINIRT_CUDA_ARCHITECTURES "75-real;80-real;86-real;89-real;90-real;100-real;120" CACHE STRING
    "CUDA architectures of the GPU module, in CMake's CUDA_ARCHITECTURES syntax (N-real: machine code; N: machine code and PTX)")

find_package(CUDAToolkit QUIET)
set(MINIRT_GPU_BACKEND OFF)
# What a build without the toolkit would target: CUDA 13, cuDNN 9, cuBLAS 13.
set(MINIRT_GPU_BUILD_TOOLKIT "13.0.0")
set(MINIRT_GPU_BUILD_CUDNN "9.0.0")
set(MINIRT_GPU_BUILD_CUBLAS "13.0.0")
set(MINIRT_GPU_BUILD_WHY_NOT "")

if(NOT CUDAToolkit_FOUND)
  set(MINIRT_GPU_BUILD_WHY_NOT "the CUDA toolkit was not found when minirt was configured")
else()
  set(MINIRT_GPU_BUILD_TOOLKIT "${CUDAToolkit_VERSION}")
  find_path(MINIRT_CUDNN_INCLUDE_DIR cudnn_version.h
    HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV CUDNN_ROOT ENV CUDNN_PATH
    PATH_SUFFIXES include
    DOC "Folder holding cuDNN's headers (cudnn_version.h)")
  find_path(MINIRT_CUBLAS_INCLUDE_DIR cublas_api.h HINTS ${CUDAToolkit_INCLUDE_DIRS}
    DOC "Folder holding cuBLAS's headers (cublas_api.h)")
  if(MINIRT_CUBLAS_INCLUDE_DIR)
    file(STRINGS ${MINIRT_CUBLAS_INCLUDE_DIR}/cublas_api.h _v REGEX "^#define CUBLAS_VER_(MAJOR|MINOR|PATCH) ")
    string(REGEX REPLACE ".*CUBLAS_VER_MAJOR +([0-9]+).*" "\\1" _major "${_v}")
    string(REGEX REPLACE ".*CUBLAS_VER_MINOR +([0-9]+).*" "\\1" _minor "${_v}")
    string(REGEX REPLACE ".*CUBLAS_VER_PATCH +([0-9]+).*" "\\1" _patch "${_v}")
    set(MINIRT_GPU_BUILD_CUBLAS "${_major}.${_minor}.${_patch}")
  endif()
  if(NOT MINIRT_CUDNN_INCLUDE_DIR)
    set(MINIRT_GPU_BUILD_WHY_NOT "cuDNN's headers (cudnn_version.h) were not found when minirt was configured")
  elseif(NOT MINIRT_CUBLAS_INCLUDE_DIR)
    set(MINIRT_GPU_BUILD_WHY_NOT "cuBLAS's headers (cublas_api.h) were not found when minirt was configured")
  else()
    file(STRINGS ${MINIRT_CUDNN_INCLUDE_DIR}/cudnn_version.h _v REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ")
    string(REGEX REPLACE ".*CUDNN_MAJOR +([0-9]+).*" "\\1" _major "${_v}")
    string(REGEX REPLACE ".*CUDNN_MINOR +([0-9]+).*" "\\1" _minor "${_v}")
    string(REGEX REPLACE ".*CUDNN_PATCHLEVEL +([0-9]+).*" "\\1" _patch "${_v}")
    set(MINIRT_GPU_BUILD_CUDNN "${_major}.${_minor}.${_patch}")
    set(MINIRT_GPU_BACKEND ON)
  endif()
endif()

if(MINIRT_GPU_BACKEND)
  set(MINIRT_GPU_BUILD_HAS_BACKEND 1)
  message(STATUS "GPU backend: CUDA ${MINIRT_GPU_BUILD_TOOLKIT}, cuDNN ${MINIRT_GPU_BUILD_CUDNN}, "
                 "cuBLAS ${MINIRT_GPU_BUILD_CUBLAS}, architectures ${MINIRT_CUDA_ARCHITECTURES}")
else()
  set(MINIRT_GPU_BUILD_HAS_BACKEND 0)
  message(STATUS "GPU backend: none (${MINIRT_GPU_BUILD_WHY_NOT})")
endif()

configure_file(${CMAKE_CURRENT_LIST_DIR}/build_facts.h.in ${CMAKE_BINARY_DIR}/generated/runtime/gpu/build_facts.h @ONLY)

target_sources(minirt_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/stack.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gate.cpp
  ${CMAKE_CURRENT_LIST_DIR}/probe.cpp)
target_include_directories(minirt_core PRIVATE $<BUILD_INTERFACE:${CMAKE_BINARY_DIR}/generated>)
target_link_libraries(minirt_core PRIVATE ${CMAKE_DL_LIBS})
