// classify: the smallest useful program on minirt's public API. It loads a
// classification model, feeds it one image given as raw float32 values in the
// model's input layout (or a fixed test pattern), and prints the top-5 classes.
//
//   classify MODEL.onnx [IMAGE.raw]
#include <minirt/minirt.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: classify MODEL.onnx [IMAGE.raw]\n");
    return 1;
  }
  try {
    auto model = minirt::Model::load(argv[1]);
    const minirt::ValueDesc& in = model->inputs().at(0);
    minirt::Shape shape = in.dims;
    for (auto& d : shape) d = d < 0 ? 1 : d;  // batch of one

    // The image: caller-owned memory, wrapped without a copy.
    std::vector<float> pixels(static_cast<size_t>(minirt::shape_numel(shape)));
    if (argc > 2) {
      std::ifstream f(argv[2], std::ios::binary);
      if (!f.read(reinterpret_cast<char*>(pixels.data()),
                  static_cast<std::streamsize>(pixels.size() * sizeof(float)))) {
        std::fprintf(stderr, "classify: %s does not hold %zu float32 values\n", argv[2], pixels.size());
        return 1;
      }
    } else {
      for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>(i % 255) / 255.0f;
    }
    minirt::Tensor image = minirt::Tensor::wrap(minirt::DType::kFloat32, shape, pixels.data());

    minirt::Session session(model);
    std::vector<minirt::Tensor> out = session.run({{in.name, image}});
    const minirt::Tensor& scores = out.at(0);
    std::vector<int64_t> order(static_cast<size_t>(scores.numel()));
    std::iota(order.begin(), order.end(), 0);
    size_t k = std::min<size_t>(5, order.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<long>(k), order.end(),
                      [&](int64_t a, int64_t b) { return scores.data<float>()[a] > scores.data<float>()[b]; });
    std::printf("%s on %s:\n", argv[1], session.device_reason().c_str());
    for (size_t i = 0; i < k; ++i)
      std::printf("class %lld %.6f\n", static_cast<long long>(order[i]), scores.data<float>()[order[i]]);
    return 0;
  } catch (const minirt::Error& e) {
    std::fprintf(stderr, "classify: %s\n", e.what());
    return 2;
  }
}
