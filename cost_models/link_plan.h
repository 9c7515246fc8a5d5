// A collective or transfer as load on the links of the topology: the shared currency of the
// analytic and the flow-level network models, and all that the simulator (sim/) sees of one.
//
// A plan has a latency (launch plus per-step latencies, not bandwidth) and phases that run one
// after the other. A phase moves `units_per_byte` units of work per byte of the collective's
// buffer, at a rate r (units per second) that every link must carry: link l is loaded with
// r * weight. `bytes` is the payload the link carries per unit, `weight` the share of its
// capacity that unit takes, which is larger than `bytes` where the protocol spends line space on
// flags (LL, LL128) or the GPU's SMs spend time on the buffer that the link cannot hide (see
// CollectiveParams::pass_efficiency).
//
// Alone on the network, a phase runs at r = min over its links of capacity / weight; that is the
// analytic (closed-form) model. Sharing links with other phases, rates come from max-min fair
// sharing (sim/flow_network.h); that is the flow-level model.
//
// Which NCCL algorithm and protocol produced a plan is the cost model's business
// (cost_models/comm_plan.h); this header includes nothing of NCCL, and tests/layers_test.cpp
// holds sim/ to it and to cost_model.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

#include "common/units.h"

namespace cs::cost {

struct LinkLoad {
  uint32_t link = 0;  // topology link index
  double bytes = 0;   // payload per unit of work
  double weight = 0;  // capacity-seconds x capacity per unit of work (>= bytes)
};

// A phase's loads, sorted by link, one entry per link: built once, then shared by every plan and
// cache that holds the phase (copying a LinkPhase copies a pointer). A ring over 131,072 GPUs
// loads half a million links, and the plans of its protocols, of both all-gather and
// reduce-scatter (which share one ring) and of its narrowed copies kept a copy each: a quarter of
// that run's memory. A list read through a scale (scaled()) yields each weight times it.
class LoadList {
 public:
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = LinkLoad;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = LinkLoad;
    Iterator() = default;
    Iterator(const LinkLoad* at, double scale) : at_(at), scale_(scale) {}
    LinkLoad operator*() const { return {at_->link, at_->bytes, at_->weight * scale_}; }
    Iterator& operator++() {
      ++at_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator was = *this;
      ++at_;
      return was;
    }
    bool operator==(const Iterator& o) const { return at_ == o.at_; }

   private:
    const LinkLoad* at_ = nullptr;
    double scale_ = 1.0;
  };

  LoadList() = default;
  LoadList(std::vector<LinkLoad> loads)  // implicit: a phase is written with its loads in braces
      : loads_(std::make_shared<const std::vector<LinkLoad>>(std::move(loads))) {}
  LoadList(std::initializer_list<LinkLoad> loads) : LoadList(std::vector<LinkLoad>(loads)) {}

  Iterator begin() const { return {data(), scale_}; }
  Iterator end() const { return {data() + size(), scale_}; }
  size_t size() const { return loads_ ? loads_->size() : 0; }
  bool empty() const { return size() == 0; }
  LinkLoad operator[](size_t i) const { return *Iterator(data() + i, scale_); }
  // The same loads with every weight times `r`, sharing this list's storage. A list already read
  // through a scale is copied with it applied first, so that each weight is (w x earlier) x r,
  // rounded as when the weights were multiplied in place.
  LoadList scaled(double r) const {
    LoadList out = scale_ == 1.0 ? *this : LoadList(std::vector<LinkLoad>(begin(), end()));
    out.scale_ = r;
    return out;
  }

 private:
  const LinkLoad* data() const { return loads_ ? loads_->data() : nullptr; }
  std::shared_ptr<const std::vector<LinkLoad>> loads_;
  double scale_ = 1.0;
};

struct LinkPhase {
  double units_per_byte = 0;
  LoadList loads;
  double seconds_per_unit = 0;  // alone on the network: max over links of weight / capacity
};

struct LinkPlan {
  SimTime latency;
  std::vector<LinkPhase> phases;
  double seconds_per_byte = 0;  // alone on the network, all phases
  int channels = 1;             // parallel rings/trees (one per NIC across nodes)

  // Closed form: latency + bytes x seconds_per_byte.
  SimTime time(Bytes bytes) const {
    return latency + SimTime::from_seconds(static_cast<double>(bytes.count) * seconds_per_byte);
  }
};

}  // namespace cs::cost
