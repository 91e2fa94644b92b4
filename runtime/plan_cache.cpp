#include "runtime/plan_cache.h"

#include <cstring>

namespace minirt {

bool PlanCache::matches(const PlanEntry& e, const std::vector<const Tensor*>& inputs) const {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i]->shape() != e.shapes[i]) return false;
  for (size_t k = 0; k < value_inputs.size(); ++k) {
    const Tensor& now = *inputs[value_inputs[k]];
    const Tensor& then = e.values[k];
    if (now.dtype() != then.dtype() || now.nbytes() != then.nbytes() ||
        std::memcmp(now.raw(), then.raw(), now.nbytes()) != 0)
      return false;
  }
  return true;
}

std::shared_ptr<const PlanEntry> PlanCache::find(const std::vector<const Tensor*>& inputs) {
  if (!plans.empty() && matches(*plans.back(), inputs)) return plans.back();
  for (size_t i = 0; i < plans.size(); ++i) {
    if (!matches(*plans[i], inputs)) continue;
    auto hit = plans[i];
    plans.erase(plans.begin() + static_cast<long>(i));
    plans.push_back(hit);
    return hit;
  }
  return nullptr;
}

namespace {
std::shared_ptr<const PlanEntry> make_entry(std::unique_ptr<Plan> plan, const std::vector<const Tensor*>& inputs,
                                            const std::vector<size_t>& value_inputs) {
  auto e = std::make_shared<PlanEntry>();
  e->plan = std::move(plan);
  for (const Tensor* t : inputs) e->shapes.push_back(t->shape());
  for (size_t k : value_inputs) e->values.push_back(inputs[k]->clone());
  const auto& outs = e->plan->output_values;
  e->first_output_of_value.assign(outs.size(), -1);
  for (size_t i = 0; i < outs.size(); ++i)
    for (size_t j = 0; j < i && e->first_output_of_value[i] < 0; ++j)
      if (outs[j] == outs[i]) e->first_output_of_value[i] = static_cast<int>(j);
  return e;
}
}  // namespace

std::shared_ptr<const PlanEntry> PlanCache::add(std::unique_ptr<Plan> plan, const std::vector<const Tensor*>& inputs) {
  auto e = make_entry(std::move(plan), inputs, value_inputs);
  if (plans.size() >= kMaxPlans) plans.erase(plans.begin());
  plans.push_back(e);
  return e;
}

bool PlanCache::replace(std::unique_ptr<Plan> plan, const std::vector<const Tensor*>& inputs) {
  for (auto& kept : plans) {
    if (!matches(*kept, inputs)) continue;
    auto e = make_entry(std::move(plan), inputs, value_inputs);
    if (last == kept) last = e;
    kept = e;
    return true;
  }
  return false;
}

}  // namespace minirt
