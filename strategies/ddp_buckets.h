// PyTorch DDP's gradient bucketing (torch/csrc/distributed/c10d/reducer.cpp,
// compute_bucket_assignment_by_size): parameters in reverse registration order fill a bucket
// until its size reaches the cap, then the bucket closes; the first bucket's cap is 1 MiB, later
// ones bucket_cap_mb. A parameter larger than the cap gets a bucket of its own.
#pragma once

#include <vector>

#include "common/units.h"
#include "models/model_spec.h"

namespace cs::strategy {

struct Bucket {
  std::vector<int> params;  // parameter ids, in the order they were added
  Bytes bytes;
  bool experts = false;  // routed experts' parameters: reduced over the expert data-parallel group
};

std::vector<Bucket> assign_buckets(const std::vector<model::ParameterTensor>& params,
                                   int64_t bytes_per_element, Bytes first_cap, Bytes cap);

}  // namespace cs::strategy
