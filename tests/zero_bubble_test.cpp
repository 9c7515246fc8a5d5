// ZB-H1 (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", section 2.1): its order, the memory
// bound it keeps (1F1B's, plus the linears' inputs of at most s micro-batches awaiting their W on
// stage s), the planner's bound against the simulator's peak, and the bubble it saves.
#include <gtest/gtest.h>

#include <sstream>

#include "driver/simulation.h"
#include "models/model_work.h"
#include "planner/planner.h"
#include "scenarios/scenario.h"
#include "strategies/pipeline_schedule.h"
#include "test_paths.h"

namespace cs {
namespace {

using strategy::Pass;
using strategy::PipelineSchedule;

std::string order_of(int p, int s, int m) {
  std::ostringstream out;
  for (const strategy::Slot& slot :
       strategy::pipeline_schedule(PipelineSchedule::zb_h1, p, 1, s, m)) {
    if (out.tellp() > 0) out << ' ';
    out << (slot.pass == Pass::forward      ? 'F'
            : slot.pass == Pass::input_grad ? 'B'
                                            : 'W')
        << slot.micro_batch;
  }
  return out.str();
}

TEST(ZeroBubble, H1OrderForFourStagesAndEightMicroBatches) {
  // Written out from the rule: stage s runs min(p - s - 1, m) warm-up forwards, then F and B
  // while forwards remain, then the remaining B; after each B the oldest W runs while more than
  // s micro-batches await theirs; the held W passes close the order.
  // s = 0: 3 warm-up forwards, no W held: F B W from the first B on.
  EXPECT_EQ(order_of(4, 0, 8),
            "F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 B6 W6 B7 W7");
  // s = 1: 2 warm-up forwards, W0 waits until B1.
  EXPECT_EQ(order_of(4, 1, 8),
            "F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 F6 B4 W3 F7 B5 W4 B6 W5 B7 W6 W7");
  // s = 2: 1 warm-up forward, W0 waits until B2.
  EXPECT_EQ(order_of(4, 2, 8),
            "F0 F1 B0 F2 B1 F3 B2 W0 F4 B3 W1 F5 B4 W2 F6 B5 W3 F7 B6 W4 B7 W5 W6 W7");
  // s = 3 (last): no warm-up, W0 waits until B3.
  EXPECT_EQ(order_of(4, 3, 8),
            "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 W6 W7");
}

TEST(ZeroBubble, H1OrderInvariantsAndThePlannersHeldCounts) {
  for (int p = 2; p <= 8; ++p) {
    for (int m = 1; m <= 20; ++m) {
      for (int s = 0; s < p; ++s) {
        const std::string what =
            "p " + std::to_string(p) + " s " + std::to_string(s) + " m " + std::to_string(m);
        const auto slots = strategy::pipeline_schedule(PipelineSchedule::zb_h1, p, 1, s, m);
        ASSERT_EQ(slots.size(), static_cast<size_t>(3 * m)) << what;
        std::vector<int> state(static_cast<size_t>(m), 0);  // passes done: 0 none, 1 F, 2 B, 3 W
        int f = 0, b = 0, w = 0;
        std::pair<int64_t, int64_t> peak{
            0, 0};  // (awaiting B, awaiting W) after the forward holding most
        for (const auto& slot : slots) {
          int& done = state[static_cast<size_t>(slot.micro_batch)];
          const int kind = slot.pass == Pass::forward ? 0 : slot.pass == Pass::input_grad ? 1 : 2;
          ASSERT_EQ(done, kind) << what << ": F(i) before B(i) before W(i), each once";
          done = kind + 1;
          (kind == 0 ? f : kind == 1 ? b : w) += 1;
          // 1F1B's bound on what awaits B; at most s micro-batches await W, but between a B and
          // the held W that runs right after it.
          EXPECT_LE(f - b, std::min(p - s, m)) << what;
          EXPECT_LE(b - w, kind == 1 ? s + 1 : s) << what;
          if (kind == 0 && std::pair<int64_t, int64_t>{f - b, b - w} > peak) peak = {f - b, b - w};
        }
        for (int d : state) EXPECT_EQ(d, 3) << what;
        // The planner's closed form is the state after the forward that holds most: 1F1B's
        // micro-batches and, beside them, as many held W passes as any forward sees.
        EXPECT_EQ(planner::zb_h1_held(p, s, m), peak) << what;
        EXPECT_EQ(peak.first, std::min(p - s, m)) << what;
      }
    }
  }
}

// Llama 2 70B as scenarios/llama2-70b-64xh100.yaml ships it (TP 8 with SP, PP 4, DP 2, ZeRO-1,
// bf16, selective recompute, seq 4096, micro-batch 1, 64 micro-batches per replica), but one model
// chunk per stage under `schedule`.
scenario::Scenario llama2_70b_scenario(PipelineSchedule schedule) {
  auto s =
      scenario::load_scenario(cs::test_paths::source_dir() + "/scenarios/llama2-70b-64xh100.yaml");
  s.layout.schedule = schedule;
  s.layout.virtual_stages = 1;
  return s;
}

driver::SimulationResult simulate(const scenario::Scenario& s) {
  return driver::simulate(s, {.with_baseline = false,
                              .suggest = false,
                              .ranks = driver::RankMode::representative,
                              .memory_samples = false});
}

driver::SimulationResult llama2_70b(PipelineSchedule schedule) {
  return simulate(llama2_70b_scenario(schedule));
}

TEST(ZeroBubble, H1KeepsOneFOneBsPeakOnLlama2With64MicroBatches) {
  const auto one_f_one_b = llama2_70b(PipelineSchedule::one_f_one_b);
  const auto zb = llama2_70b(PipelineSchedule::zb_h1);
  ASSERT_EQ(zb.report.ranks.size(), 4u);
  // What a micro-batch awaiting W keeps of a decoder layer (model_work.h): each linear's input,
  // per token on a TP rank: qkv's and fc1's (h / t = 1024 each, SP-sharded), the projection's
  // (q_hidden / t = 1024) and fc2's (ffn / t = 28672 / 8 = 3584): 6656 bf16 values = 13,312 B,
  // x 4096 tokens = 54,525,952 B. Stage s (20 layers) holds it for s micro-batches beside 1F1B's
  // p - s (m = 64 >= p, so the full s): 20 x s x 54,525,952 = s x 1,090,519,040 B more than
  // 1F1B's stage s, and no more on the first stage, 1F1B's busiest.
  // Compared on the step's tensors: the reserve beside them (its fragmentation share grows with
  // them) is left out.
  const int64_t per_layer = 4096 * (1024 + 1024 + 1024 + 3584) * 2;
  auto tensors = [](const sim::RankReport& r) {
    return r.memory.peak - r.memory.at_peak[static_cast<size_t>(ir::MemoryCategory::reserve)];
  };
  for (size_t s = 0; s < 4; ++s) {
    EXPECT_EQ(tensors(zb.report.ranks[s]) - tensors(one_f_one_b.report.ranks[s]),
              static_cast<int64_t>(s) * 20 * per_layer)
        << "stage " << s;
  }
  EXPECT_EQ(zb.report.peak_memory, one_f_one_b.report.peak_memory);
  EXPECT_EQ(zb.report.peak_index, 0u);
  // Before this bound the list schedule deferred W passes to the end of the step: 92.85 GiB.
  EXPECT_LT(static_cast<double>(zb.report.peak_memory), 40.0 * (1 << 30));
}

TEST(ZeroBubble, PlannerBoundIsTheSimulatedPeakOfTheBusiestStage) {
  // The last stage made the busiest: 35 of Llama 2 70B's 80 layers on it, 15 on each other one.
  // Under ZB-H1 it holds, at its peak, 1F1B's one micro-batch awaiting B and 3 awaiting W
  // (m = 64): per layer A + 3 W, where A is what a layer saves (planner and simulator take it
  // from model_work) and W = 54,525,952 B (see above). The planner's activations must be the
  // simulator's on that stage, and its whole bound no more than the simulated peak.
  for (PipelineSchedule schedule : {PipelineSchedule::one_f_one_b, PipelineSchedule::zb_h1}) {
    auto s = llama2_70b_scenario(schedule);
    s.layout.first_stage_layers = 15;
    s.layout.last_stage_layers = 35;
    const auto run = simulate(s);
    planner::Candidate c;
    c.layout = s.layout;
    c.training = s.training;
    planner::HeldActivations held;
    model::WorkShape shape;
    shape.micro_batch = 1;
    shape.seq = 4096;
    shape.tp = 8;
    shape.sequence_parallel = true;
    shape.precision = s.training.precision;
    shape.attention = s.training.attention;
    shape.recompute = s.training.recompute;
    held.weight_grad_inputs_per_layer =
        model::weight_grad_input_bytes_of_layer(s.model, shape, 0).count;
    ASSERT_EQ(held.weight_grad_inputs_per_layer, 4096 * (1024 + 1024 + 1024 + 3584) * 2);
    const bool zb = schedule == PipelineSchedule::zb_h1;
    const auto bound =
        planner::memory_lower_bound(s, c, planner::block_parameters(s.model), zb ? &held : nullptr);
    const int64_t a = model::activation_bytes_per_layer(s.model, shape).count;
    EXPECT_EQ(bound.activations, 35 * (a + (zb ? 3 * held.weight_grad_inputs_per_layer : 0)));
    const auto& last = run.report.ranks[3].memory;
    EXPECT_EQ(run.report.peak_index, 3u);
    EXPECT_EQ(last.at_peak[static_cast<size_t>(ir::MemoryCategory::activations)], bound.activations)
        << strategy::to_string(schedule);
    EXPECT_LE(bound.total(), last.peak) << strategy::to_string(schedule);
  }
}

TEST(ZeroBubble, H1IsFasterThanOneFOneBWithASmallerBubbleOnLlama2) {
  const auto one_f_one_b = llama2_70b(PipelineSchedule::one_f_one_b);
  const auto zb = llama2_70b(PipelineSchedule::zb_h1);
  // Both run the same F, B and W work on every stage; ZB-H1 sends each input gradient upstream
  // at the end of B instead of after B and W, so the backward wave reaches stage 0 sooner, and
  // the W passes stage s held fill its cool-down: the step shortens by about 2 (p - 1) W
  // (Qi et al.), and every stage idles less.
  EXPECT_LT(zb.report.step_time.seconds(), one_f_one_b.report.step_time.seconds());
  for (size_t s = 0; s < 4; ++s)
    EXPECT_LT(zb.report.bubble_fraction(s), one_f_one_b.report.bubble_fraction(s)) << "stage " << s;
}

}  // namespace
}  // namespace cs
