// minirt/minirt.h: everything a program that embeds minirt needs.
//
//   #include <minirt/minirt.h>
//   auto model = minirt::Model::load(argv[1]);
//   minirt::Session session(model);
//   auto outputs = session.run({{model->inputs()[0].name, input}});
#pragma once

#include <minirt/error.h>
#include <minirt/export.h>
#include <minirt/half.h>
#include <minirt/session.h>
#include <minirt/tensor.h>

#define MINIRT_VERSION_MAJOR 0
#define MINIRT_VERSION_MINOR 1
#define MINIRT_VERSION_PATCH 0
#define MINIRT_VERSION_STRING "0.1.0"
