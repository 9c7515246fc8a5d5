// One rank of the cpu backend: stream threads, dependencies, real kernels, Gloo collectives,
// the allocator, and the result file. See executor.h for what the data means. Built as the plugin
// libclustersim_cpu.so (cpu_plugin.h): the program's run_cpu_rank loads it and forwards here.
#include <cblas.h>
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "executor/cpu_plugin.h"
#include "executor/memory_ledger.h"

namespace cs::exec {
namespace {

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// A task that failed: the message already names the task, rank and stream.
struct TaskFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string bytes_text(int64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / (1 << 20));
  return buf;
}

// The allocator: real buffers, as the memory tasks say, counted by the ledger both backends share
// (executor/memory_ledger.h), with the time of the peak recorded.
class Memory {
 public:
  explicit Memory(int64_t limit) : limit_(limit) {}

  void change(ir::MemoryCategory cat, int64_t delta, const std::string& task, int64_t step_start) {
    std::lock_guard lock(mutex_);
    if (delta <= 0) {
      ledger_.free(cat, -delta, [](Block&) {});
      return;
    }
    if (ledger_.beyond(limit_, delta)) {
      throw TaskFailure("out of memory: task '" + task + "' asked for " + bytes_text(delta) + " (" +
                        std::string(ir::to_string(cat)) + ") with " +
                        bytes_text(ledger_.current()) + " alive of a " + bytes_text(limit_) +
                        " limit: " + ledger_.alive_text(bytes_text));
    }
    if (ledger_.take_back(cat, delta)) return;
    // Only parameters and gradients hold values the kernels read; the other categories are
    // counted, not backed (a caching allocator hands out memory without touching it).
    const bool backed =
        cat == ir::MemoryCategory::parameters || cat == ir::MemoryCategory::gradients;
    std::vector<float> block(backed ? static_cast<size_t>((delta + 3) / 4) : 0, 0.0f);
    if (cat == ir::MemoryCategory::parameters) {
      // Every rank starts from the same parameters.
      for (size_t i = 0; i < block.size(); ++i)
        block[i] = 0.01f * std::sin(static_cast<float>(i % 4096));
    }
    if (ledger_.add(cat, {delta, std::move(block)})) peak_time_ = now_ns() - step_start;
  }

  // The live blocks of a category, in allocation order, as float spans.
  std::vector<std::pair<float*, size_t>> region(ir::MemoryCategory cat) {
    std::lock_guard lock(mutex_);
    std::vector<std::pair<float*, size_t>> out;
    for (auto& b : ledger_.live(cat)) out.emplace_back(b.data.data(), b.data.size());
    return out;
  }

  // End of a step: what is still alive persists into the next one.
  void end_step() {
    std::lock_guard lock(mutex_);
    ledger_.end_step();
  }

  int64_t peak() const { return ledger_.peak(); }
  int64_t peak_time() const { return peak_time_; }
  const std::array<int64_t, ir::kMemoryCategoryCount>& at_peak() const { return ledger_.at_peak(); }
  void reset_peak() {
    std::lock_guard lock(mutex_);
    ledger_.reset_peak();
  }

 private:
  struct Block {
    int64_t bytes;
    std::vector<float> data;
  };
  std::mutex mutex_;
  int64_t limit_;
  MemoryLedger<Block> ledger_;
  int64_t peak_time_ = 0;
};

// Gloo contexts, one per (group, stream) and per transfer direction, connected on first use.
class Collectives {
 public:
  Collectives(const std::string& dir, std::chrono::milliseconds timeout, const std::string& host)
      : store_(dir + "/store"), timeout_(timeout) {
    gloo::transport::tcp::attr attr;
    attr.hostname = host;
    device_ = gloo::transport::tcp::CreateDevice(attr);
  }

  std::shared_ptr<gloo::Context> context(const std::string& key, int index, int size) {
    std::shared_ptr<Entry> e;
    {
      std::lock_guard lock(mutex_);
      auto& slot = entries_[key];
      if (!slot) slot = std::make_shared<Entry>();
      e = slot;
    }
    // Connect outside the lock: other streams may be connecting their own groups meanwhile.
    std::call_once(e->once, [&] {
      auto ctx = std::make_shared<gloo::rendezvous::Context>(index, size);
      ctx->setTimeout(timeout_);
      gloo::rendezvous::PrefixStore prefix(key, store_);
      ctx->connectFullMesh(prefix, device_);
      e->context = ctx;
    });
    if (!e->context) throw TaskFailure("could not connect Gloo context " + key);
    return e->context;
  }
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  struct Entry {
    std::once_flag once;
    std::shared_ptr<gloo::Context> context;
  };
  gloo::rendezvous::FileStore store_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;
};

uint64_t fnv(const float* p, size_t n, uint64_t h = 1469598103934665603ULL) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n * sizeof(float); ++i) h = (h ^ b[i]) * 1099511628211ULL;
  return h;
}

class Rank {
 public:
  Rank(const ir::TaskGraph& g, const RankOptions& o)
      : g_(g), o_(o), memory_(o.faults.memory_limit), comm_(o.dir, o.timeout, o.gloo_host) {
    const auto r = static_cast<ir::RankId>(o.rank);
    streams_.resize(g.stream_names().size());
    scratch_.resize(g.stream_names().size());
    preds_.resize(g.size());
    for (ir::TaskId t = 0; t < g.size(); ++t) {
      if (g.task(t).rank == r) streams_[g.task(t).stream].push_back(t);
    }
    for (const auto& [before, after] : g.dependencies()) {
      if (g.task(after).rank == r) preds_[after].push_back(before);
    }
    done_.assign(g.size(), 0);
    start_.assign(g.size(), 0);
    end_.assign(g.size(), 0);
  }

  void run() {
    if (o_.barrier_clock) {
      // Every rank leaves the barrier within a network round trip of the others: their times,
      // counted from here, share an origin although their machines' clocks do not.
      try {
        auto ctx = comm_.context("world.clock", o_.rank, static_cast<int>(g_.ranks()));
        gloo::BarrierOptions opts(ctx);
        opts.setTimeout(comm_.timeout());
        gloo::barrier(opts);
      } catch (const gloo::Exception& e) {
        throw TaskFailure("rank " + std::to_string(o_.rank) + ": the start-up barrier of all " +
                          std::to_string(g_.ranks()) + " ranks gave up after " +
                          std::to_string(comm_.timeout().count() / 1000.0).substr(0, 4) + " s (" +
                          e.what() + ")");
      }
      origin_ = now_ns();
    }
    const int total = o_.warmup + o_.steps;
    for (int step = 0; step < total; ++step) {
      measured_ = step >= o_.warmup;
      last_ = step == total - 1;
      std::fill(done_.begin(), done_.end(), 0);
      dp_cursor_ = 0;
      if (step == o_.warmup) memory_.reset_peak();
      step_start_ = now_ns();
      std::vector<std::thread> threads;
      for (size_t s = 0; s < streams_.size(); ++s) {
        if (!streams_[s].empty()) threads.emplace_back([this, s] { run_stream(s); });
      }
      for (auto& t : threads) t.join();
      if (failed_) throw TaskFailure(failure_);
      if (step + 1 < total) memory_.end_step();
      int64_t first = INT64_MAX, last = 0;
      for (const auto& tasks : streams_) {
        for (ir::TaskId t : tasks) {
          first = std::min(first, start_[t]);
          last = std::max(last, end_[t]);
        }
      }
      if (!measured_) warmup_end_ = last;
      if (measured_) {
        step_spans_.emplace_back(first, last);
        step_starts_.push_back(start_);
        step_ends_.push_back(end_);
      }
    }
  }

  void write(const std::string& path) const {
    std::ofstream f(path + ".tmp");
    f << "steps " << step_spans_.size() << "\n";
    f << "warmup_end " << warmup_end_ << "\n";
    for (size_t i = 0; i < step_spans_.size(); ++i)
      f << "step " << i << " " << step_spans_[i].first << " " << step_spans_[i].second << "\n";
    for (size_t i = 0; i < step_spans_.size(); ++i) {
      for (const auto& tasks : streams_) {
        for (ir::TaskId t : tasks)
          f << "task " << t << " " << i << " " << step_starts_[i][t] << " " << step_ends_[i][t]
            << "\n";
      }
    }
    f << "peak " << memory_.peak() << " " << memory_.peak_time();
    for (int64_t b : memory_.at_peak()) f << " " << b;
    f << "\n";
    uint64_t h = 1469598103934665603ULL;
    auto params = const_cast<Memory&>(memory_).region(ir::MemoryCategory::parameters);
    for (const auto& [p, n] : params) h = fnv(p, n, h);
    char hex[32];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    f << "params " << hex << "\n";
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(grad_hash_));
    f << "grads " << hex << "\n";
    f.close();
    std::rename((path + ".tmp").c_str(), path.c_str());  // the parent never reads half a file
  }

 private:
  void run_stream(size_t s) {
    stream_scratch() = &scratch_[s];
    for (ir::TaskId t : streams_[s]) {
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] {
          return failed_ || std::all_of(preds_[t].begin(), preds_[t].end(),
                                        [&](ir::TaskId p) { return done_[p] != 0; });
        });
        if (failed_) return;
      }
      start_[t] = now_ns() - origin_;
      try {
        execute(t);
      } catch (const TaskFailure& e) {
        fail(e.what());
        return;
      } catch (const gloo::Exception& e) {
        fail(describe(t) + ": " + e.what());
        return;
      } catch (const std::exception& e) {
        fail(describe(t) + ": " + e.what());
        return;
      }
      end_[t] = now_ns() - origin_;
      {
        std::lock_guard lock(mutex_);
        done_[t] = 1;
      }
      cv_.notify_all();
    }
  }

  void fail(const std::string& message) {
    {
      std::lock_guard lock(mutex_);
      if (!failed_) failure_ = message;
      failed_ = true;
    }
    cv_.notify_all();
  }

  std::string describe(ir::TaskId t) const {
    const ir::Task& task = g_.task(t);
    return "task '" + g_.task_name(t) + "' (" + std::string(ir::to_string(task.kind)) +
           ") on rank " + std::to_string(task.rank) + ", stream " + g_.stream_names()[task.stream];
  }

  void execute(ir::TaskId t) {
    const ir::Task& task = g_.task(t);
    switch (task.kind) {
      case ir::TaskKind::compute:
        compute(t, g_.compute(task));
        break;
      case ir::TaskKind::memory: {
        const ir::MemoryOp& m = g_.memory(task);
        try {
          memory_.change(m.category, m.delta, g_.task_name(t), step_start_);
        } catch (const TaskFailure& e) {
          throw TaskFailure(describe(t) + ": " + e.what());
        }
        break;
      }
      case ir::TaskKind::delay:
        std::this_thread::sleep_for(std::chrono::nanoseconds(g_.delay(task).ps / 1000));
        break;
      case ir::TaskKind::collective:
        collective(t);
        break;
      case ir::TaskKind::send:
      case ir::TaskKind::recv:
        transfer(t);
        break;
    }
  }

  // --- kernels --------------------------------------------------------------------------------
  // Scratch inputs and outputs per stream, kept across steps (a real model's activations are
  // already in memory; filling them must not count as kernel time after the first step).
  static std::array<std::vector<float>, 4>*& stream_scratch() {
    thread_local std::array<std::vector<float>, 4>* current = nullptr;
    return current;
  }
  static std::vector<float>& scratch(int which, size_t n) {
    auto& b = (*stream_scratch())[static_cast<size_t>(which)];
    if (b.size() < n) {
      const size_t old = b.size();
      b.resize(n);
      for (size_t i = old; i < n; ++i) b[i] = 0.001f * static_cast<float>(i % 97);
    }
    return b;
  }

  void compute(ir::TaskId t, const ir::ComputeOp& op) {
    if (!o_.faults.failing_task.empty() && g_.task_name(t) == o_.faults.failing_task &&
        (o_.faults.failing_rank < 0 || o_.faults.failing_rank == o_.rank)) {
      throw TaskFailure(describe(t) + ": kernel failed (injected failure)");
    }
    switch (op.op) {
      case ir::OpClass::gemm:
        gemm(t, op);
        break;
      case ir::OpClass::attention:
        attention(op);
        break;
      case ir::OpClass::optimizer:
        optimizer();
        break;
      default:
        streaming(op);
        break;
    }
  }

  void gemm(ir::TaskId, const ir::ComputeOp& op) {
    const auto m = static_cast<size_t>(op.m), n = static_cast<size_t>(op.n),
               k = static_cast<size_t>(op.k);
    auto& a = scratch(0, m * k);
    auto& b = scratch(1, k * n);
    auto& c = scratch(2, m * n);
    // The rank's own data: its inputs differ from its peers'.
    a[0] = static_cast<float>(o_.rank + 1);
    for (int64_t i = 0; i < std::max<int64_t>(op.batch, 1); ++i) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m),
                  static_cast<int>(n), static_cast<int>(k), 1.0f, a.data(), static_cast<int>(k),
                  b.data(), static_cast<int>(n), 0.0f, c.data(), static_cast<int>(n));
    }
  }

  void attention(const ir::ComputeOp& op) {
    // Batched GEMMs plus softmax: S = Q K^T (m x n over k), softmax rows, O = S V (m x k).
    const auto m = static_cast<size_t>(op.m), n = static_cast<size_t>(op.n),
               k = static_cast<size_t>(op.k);
    auto& q = scratch(0, m * k);
    auto& kv = scratch(1, n * k);
    auto& s = scratch(2, m * n);
    auto& out = scratch(3, m * k);
    // One (batch, head) item's forward, as the model counts it: 4 m n k FLOPs, halved when
    // causal. Backward ops carry 2.5x that: the kernel runs as many items as the op's FLOPs pay
    // for, so its time follows the model's work in both directions.
    const double per_item = (op.causal ? 2.0 : 4.0) * static_cast<double>(m) *
                            static_cast<double>(n) * static_cast<double>(k);
    const int64_t items = std::max<int64_t>(1, std::llround(op.flops.value / per_item));
    for (int64_t b = 0; b < items; ++b) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n),
                  static_cast<int>(k), 1.0f, q.data(), static_cast<int>(k), kv.data(),
                  static_cast<int>(k), 0.0f, s.data(), static_cast<int>(n));
      for (size_t i = 0; i < m; ++i) {
        float* row = s.data() + i * n;
        const size_t valid = op.causal ? std::min(n, i + 1) : n;
        float mx = row[0], sum = 0;
        for (size_t j = 0; j < valid; ++j) mx = std::max(mx, row[j]);
        for (size_t j = 0; j < valid; ++j) sum += row[j] = std::exp(row[j] - mx);
        for (size_t j = 0; j < valid; ++j) row[j] /= sum;
        for (size_t j = valid; j < n; ++j) row[j] = 0;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m),
                  static_cast<int>(k), static_cast<int>(n), 1.0f, s.data(), static_cast<int>(n),
                  kv.data(), static_cast<int>(k), 0.0f, out.data(), static_cast<int>(k));
    }
  }

  // Memory-bound classes: read and write `bytes` (half each) in a streaming loop.
  static void streaming(const ir::ComputeOp& op) {
    const size_t n = static_cast<size_t>(std::max<int64_t>(op.bytes.count / 8, 1));
    auto& x = scratch(0, n);
    auto& y = scratch(3, n);
    for (size_t i = 0; i < n; ++i) y[i] = x[i] * 1.0001f + 0.5f;
  }

  // AdamW over every parameter block with the gradients, then zero_grad. Parameter and gradient
  // blocks may be cut differently, so the walk takes the longest run both have contiguous and
  // updates it in one tight loop (as a fused/foreach optimizer does).
  void optimizer() {
    auto params = memory_.region(ir::MemoryCategory::parameters);
    auto grads = memory_.region(ir::MemoryCategory::gradients);
    ++adam_step_;
    // PyTorch AdamW's defaults (betas 0.9 / 0.999, eps 1e-8, weight decay 0.01) with lr 1e-3.
    const float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.01f;
    const float c1 = 1.0f - std::pow(b1, static_cast<float>(adam_step_)),
                c2 = 1.0f - std::pow(b2, static_cast<float>(adam_step_));
    size_t total = 0;
    for (const auto& [p, len] : params) total += len;
    if (adam_m_.size() < total) adam_m_.resize(total), adam_v_.resize(total);
    static const float kNoGradient[1024] = {};
    size_t state_at = 0, gi = 0, go = 0;
    for (const auto& [p, len] : params) {
      for (size_t done = 0; done < len;) {
        const bool have_grad = gi < grads.size();
        const size_t run = std::min(len - done, have_grad ? grads[gi].second - go : size_t{1024});
        float* __restrict w = p + done;
        const float* __restrict g = have_grad ? grads[gi].first + go : kNoGradient;
        float* __restrict m = adam_m_.data() + state_at;
        float* __restrict v = adam_v_.data() + state_at;
        for (size_t i = 0; i < run; ++i) {
          m[i] = b1 * m[i] + (1 - b1) * g[i];
          v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
          w[i] -= lr * ((m[i] / c1) / (std::sqrt(v[i] / c2) + eps) + wd * w[i]);
        }
        done += run;
        state_at += run;
        if (have_grad && (go += run) == grads[gi].second) ++gi, go = 0;
      }
    }
    for (const auto& [g, len] : grads) std::fill(g, g + len, 0.0f);
  }

  // --- communication ----------------------------------------------------------------------------
  void collective(ir::TaskId t) {
    const ir::Task& task = g_.task(t);
    const ir::CollectiveCall& call = g_.collective(task);
    if (!o_.faults.skipped_collective.empty() && g_.task_name(t) == o_.faults.skipped_collective &&
        o_.faults.skipping_rank == o_.rank)
      return;
    const auto& members = g_.group_ranks(call.group);
    const auto me = std::find(members.begin(), members.end(), static_cast<ir::RankId>(o_.rank)) -
                    members.begin();
    const int n = static_cast<int>(members.size());
    const std::string& stream = g_.stream_names()[task.stream];
    size_t count = static_cast<size_t>(std::max<int64_t>(call.bytes.count / 4, 1));
    try {
      // Connecting is itself a rendezvous: a peer that never arrives fails it after the timeout.
      auto ctx =
          comm_.context("g" + std::to_string(call.group) + "." + stream, static_cast<int>(me), n);
      switch (call.type) {
        case ir::CollectiveType::all_reduce: {
          const bool gradients = call.gradients;
          auto& buf = scratch(2, count);
          if (gradients) copy_gradient_slice(buf.data(), count, false);
          gloo::AllreduceOptions opts(ctx);
          opts.setOutput(buf.data(), count);
          opts.setReduceFunction(
              static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
          opts.setTimeout(comm_.timeout());
          gloo::allreduce(opts);
          if (gradients)
            copy_gradient_slice(buf.data(), count, true,
                                1.0f / static_cast<float>(n));  // DDP averages
          break;
        }
        case ir::CollectiveType::all_gather: {
          count = std::max<size_t>(count / static_cast<size_t>(n), 1) * static_cast<size_t>(n);
          auto& in = scratch(0, count / static_cast<size_t>(n));
          auto& out = scratch(2, count);
          gloo::AllgatherOptions opts(ctx);
          opts.setInput(in.data(), count / static_cast<size_t>(n));
          opts.setOutput(out.data(), count);
          opts.setTimeout(comm_.timeout());
          gloo::allgather(opts);
          break;
        }
        case ir::CollectiveType::reduce_scatter: {
          // Gloo's reduce-scatter is a legacy class; an all-reduce of the input gives every rank
          // its reduced shard (and more bytes on the wire than NCCL would move).
          auto& buf = scratch(2, count);
          gloo::AllreduceOptions opts(ctx);
          opts.setOutput(buf.data(), count);
          opts.setReduceFunction(
              static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
          opts.setTimeout(comm_.timeout());
          gloo::allreduce(opts);
          break;
        }
        case ir::CollectiveType::broadcast: {
          auto& buf = scratch(2, count);
          gloo::BroadcastOptions opts(ctx);
          opts.setOutput(buf.data(), count);
          opts.setRoot(0);
          opts.setTimeout(comm_.timeout());
          gloo::broadcast(opts);
          break;
        }
        case ir::CollectiveType::all_to_all: {
          count = std::max<size_t>(count / static_cast<size_t>(n), 1) * static_cast<size_t>(n);
          auto& in = scratch(0, count);
          auto& out = scratch(2, count);
          gloo::AlltoallOptions opts(ctx);
          opts.setInput(in.data(), count);
          opts.setOutput(out.data(), count);
          opts.setTimeout(comm_.timeout());
          gloo::alltoall(opts);
          break;
        }
      }
    } catch (const gloo::Exception& e) {
      throw TaskFailure(describe(t) + ": " + std::string(ir::to_string(call.type)) + " of " +
                        bytes_text(call.bytes.count) + " over " + std::to_string(n) +
                        " ranks gave up after " +
                        std::to_string(comm_.timeout().count() / 1000.0).substr(0, 4) +
                        " s waiting for its peers (" + e.what() + ")");
    }
  }

  // Copies the next slice of the gradient memory (DDP's bucket) into `buf`, or the reduced
  // slice back, scaled by `scale` (DDP averages). On the way in, every 64th value gets this rank's
  // own contribution added: its data differs from its peers', so identical parameters afterwards
  // prove the reduction happened, at a fraction of a copy's cost.
  void copy_gradient_slice(float* buf, size_t count, bool back, float scale = 1.0f) {
    auto grads = memory_.region(ir::MemoryCategory::gradients);
    size_t total = 0;
    for (const auto& [p, len] : grads) total += len;
    if (total == 0) return;
    const size_t n = std::min(count, total);
    // Find the block holding the cursor, then copy run by run (wrapping at the end).
    size_t block = 0, offset = dp_cursor_;
    while (offset >= grads[block].second) offset -= grads[block++].second;
    const float own = 1e-3f * static_cast<float>(o_.rank + 1);
    for (size_t i = 0; i < n;) {
      const size_t run = std::min(n - i, grads[block].second - offset);
      float* p = grads[block].first + offset;
      if (back) {
        for (size_t j = 0; j < run; ++j) p[j] = buf[i + j] * scale;
      } else {
        const size_t first =
            (64 - (dp_cursor_ + i) % 64) % 64;  // global positions that are multiples of 64
        for (size_t j = first; j < run; j += 64)
          p[j] += own * (static_cast<float>((dp_cursor_ + i + j) % 1021) / 1021.0f - 0.5f);
        std::copy(p, p + run, buf + i);
      }
      i += run;
      offset = 0;
      block = (block + 1) % grads.size();
    }
    if (!back && last_ && !grad_hashed_) {  // what this rank brings to its first reduction
      grad_hash_ = fnv(buf, n);
      grad_hashed_ = true;
    }
    if (back) dp_cursor_ = (dp_cursor_ + n) % total;
  }

  void transfer(ir::TaskId t) {
    const ir::Task& task = g_.task(t);
    const ir::Transfer& x = g_.transfer(task);
    const bool sending = task.kind == ir::TaskKind::send;
    const size_t bytes = static_cast<size_t>(std::max<int64_t>(x.bytes.count, 4));
    auto& buf = scratch(sending ? 0 : 3, bytes / 4 + 1);
    const uint64_t slot = task.payload;
    try {
      auto ctx = comm_.context("p" + std::to_string(x.src) + "-" + std::to_string(x.dst),
                               sending ? 0 : 1, 2);
      auto ub = ctx->createUnboundBuffer(buf.data(), bytes);
      if (sending) {
        ub->send(1, slot);
        ub->waitSend(comm_.timeout());
      } else {
        ub->recv(0, slot);
        ub->waitRecv(comm_.timeout());
      }
    } catch (const gloo::Exception& e) {
      throw TaskFailure(describe(t) + ": " +
                        (sending ? "send to rank " + std::to_string(x.dst)
                                 : "recv from rank " + std::to_string(x.src)) +
                        " gave up after " +
                        std::to_string(comm_.timeout().count() / 1000.0).substr(0, 4) + " s (" +
                        e.what() + ")");
    }
  }

  const ir::TaskGraph& g_;
  const RankOptions& o_;
  Memory memory_;
  Collectives comm_;
  std::vector<std::vector<ir::TaskId>> streams_;
  std::vector<std::array<std::vector<float>, 4>> scratch_;  // per stream
  std::vector<std::vector<ir::TaskId>> preds_;
  std::vector<char> done_;
  std::vector<int64_t> start_, end_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool failed_ = false;
  std::string failure_;
  int64_t step_start_ = 0;
  int64_t origin_ = 0;  // subtracted from every task time (barrier_clock)
  bool measured_ = false, last_ = false;
  std::vector<std::pair<int64_t, int64_t>> step_spans_;
  int64_t warmup_end_ = 0;  // when this rank's last warm-up step ended (0: no warm-up)
  std::vector<std::vector<int64_t>> step_starts_, step_ends_;  // by measured step, by task
  size_t dp_cursor_ = 0;
  uint64_t grad_hash_ = 0;
  bool grad_hashed_ = false;
  int adam_step_ = 0;
  std::vector<float> adam_m_, adam_v_;
};

// The plugin's function (cpu_plugin.h): executor.h's run_cpu_rank, which the program forwards.
int run_rank(const ir::TaskGraph& graph, const RankOptions& options) {
  const std::string base = options.dir + "/rank" + std::to_string(options.rank);
  try {
    if (graph.representative())
      throw TaskFailure(
          "the executor needs every rank in the graph (built without representative ranks)");
    // One BLAS thread per rank, as `launch` sets for the processes it starts (under mpirun or
    // srun the environment is the launcher's; OPENBLAS_NUM_THREADS, when set, still rules).
    if (!std::getenv("OPENBLAS_NUM_THREADS")) openblas_set_num_threads(1);
    Rank rank(graph, options);
    rank.run();
    rank.write(base + ".result");
    return 0;
  } catch (const std::exception& e) {
    std::ofstream f(base + ".error");
    f << e.what() << "\n";
    return kExitExecutionFailed;
  }
}

}  // namespace
}  // namespace cs::exec

// The plugin's one export (its version script hides every other symbol). It returns the table as
// `const void*`, the type the loader calls it through (plugin_loader.cpp): a call through another
// function type is undefined (clang's UBSan stops it).
extern "C" const void* clustersim_cpu_plugin() {
  using namespace cs::exec;
  static const CpuPlugin table{.abi = kCpuPluginAbi, .run_rank = run_rank};
  return &table;
}
