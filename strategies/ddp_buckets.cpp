#include "strategies/ddp_buckets.h"

namespace cs::strategy {

std::vector<Bucket> assign_buckets(const std::vector<model::ParameterTensor>& params,
                                   int64_t bytes_per_element, Bytes first_cap, Bytes cap) {
  std::vector<Bucket> buckets;
  Bucket open;
  for (int i = static_cast<int>(params.size()) - 1; i >= 0; --i) {
    open.params.push_back(i);
    open.bytes += Bytes{params[static_cast<size_t>(i)].numel * bytes_per_element};
    const Bytes limit = buckets.empty() ? first_cap : cap;
    if (open.bytes >= limit) {
      buckets.push_back(std::move(open));
      open = Bucket{};
    }
  }
  if (!open.params.empty()) buckets.push_back(std::move(open));
  return buckets;
}

}  // namespace cs::strategy
