#include "workflows/recipe_check.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>

#include "common/error.h"
#include "common/output_file.h"
#include "common/text_file.h"
#include "driver/simulation.h"
#include "planner/plan_summary.h"
#include "planner/preset_scenario.h"
#include "strategies/data_parallel/flavour.h"
#include "strategies/pipeline_schedule.h"
#include "workflows/planning.h"

namespace cs::workflows {

namespace {

// The value of an enum whose to_string is `text` (to_string answers "?" past the last value).
template <class E>
E enum_named(const std::string& text, const std::string& what) {
  for (int i = 0; i < 64; ++i) {
    const auto e = static_cast<E>(i);
    if (to_string(e) == "?") break;
    if (to_string(e) == text) return e;
  }
  throw UserError(what + " '" + text + "' is not a known value");
}

template <class E>
E named(const std::string& text, const std::vector<std::pair<std::string, E>>& table,
        const std::string& what) {
  for (const auto& [name, e] : table)
    if (name == text) return e;
  throw UserError(what + " '" + text + "' is not a known value");
}

RecipeLayout read_layout(const YAML::Node& n) {
  RecipeLayout l;
  l.tp = n["tp"].as<int>(1);
  l.pp = n["pp"].as<int>(1);
  l.cp = n["cp"].as<int>(1);
  l.vp = n["vp"].as<int>(1);
  l.ep = n["ep"].as<int>(1);
  l.etp = n["etp"].as<int>(1);
  l.micro_batch = n["mbs"].as<int64_t>(1);
  if (n["data_parallel"])
    l.data_parallel = named(n["data_parallel"].as<std::string>(), strategy::data_parallel_names(),
                            "data_parallel");
  if (n["recompute"])
    l.recompute = enum_named<model::Recompute>(n["recompute"].as<std::string>(), "recompute");
  if (n["schedule"])
    l.schedule =
        named(n["schedule"].as<std::string>(), strategy::pipeline_schedule_names(), "schedule");
  return l;
}

// A recipe row; the file's `defaults` fill what the row leaves out.
Recipe read_recipe(const YAML::Node& row, const YAML::Node& defaults) {
  YAML::Node n = YAML::Clone(defaults ? defaults : YAML::Node(YAML::NodeType::Map));
  for (const auto& kv : row) n[kv.first.as<std::string>()] = kv.second;
  Recipe r;
  r.name = n["name"].as<std::string>("");
  r.not_expressible = n["not_expressible"].as<std::string>("");
  r.model = n["model"].as<std::string>("");
  r.cluster = n["cluster"].as<std::string>("");
  r.gpus = n["gpus"].as<int>(0);
  r.seq = n["seq"].as<int64_t>(0);
  r.global_batch = n["global_batch"].as<int64_t>(0);
  r.published_tokens_per_second_per_gpu = n["tokens_per_s_per_gpu"].as<double>(0);
  if (!r.not_expressible.empty()) return r;  // the rest may be missing: it cannot be posed
  r.precision = enum_named<model::Precision>(n["precision"].as<std::string>(), "precision");
  r.stack = named(n["stack"].as<std::string>(), model::stack_names(), "stack");
  r.grad_reduce_in_bf16 = n["grad_reduce_in_bf16"].as<bool>(false);
  const std::string moments = n["optimizer_moments"].as<std::string>("fp32");
  if (moments != "fp32" && moments != "bf16")
    throw UserError("optimizer_moments '" + moments + "' is not fp32 or bf16");
  r.bf16_optimizer_moments = moments == "bf16";
  r.layout = read_layout(n);
  return r;
}

RecipeSource read_source(const std::string& file) {
  const YAML::Node doc = YAML::Load(read_text_file(file, "recipe file", kMaxYamlFileBytes));
  RecipeSource s;
  s.file = file;
  s.name = doc["source"].as<std::string>();
  s.citation = doc["citation"].as<std::string>("");
  s.licence = doc["licence"].as<std::string>("");
  for (const auto& row : doc["recipes"]) {
    try {
      s.recipes.push_back(read_recipe(row, doc["defaults"]));
    } catch (const std::exception& e) {
      throw UserError(file + ": recipe '" + row["name"].as<std::string>("?") + "': " + e.what());
    }
  }
  return s;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

}  // namespace

strategy::PipelineSchedule RecipeLayout::expected_schedule() const {
  if (schedule) return *schedule;
  return vp > 1 ? strategy::PipelineSchedule::interleaved : strategy::PipelineSchedule::one_f_one_b;
}

std::vector<RecipeSource> load_recipe_sources(const std::string& path) {
  namespace fs = std::filesystem;
  require_file_or_folder("--recipes", path, "recipe file");
  std::vector<std::string> files;
  if (fs::is_directory(path)) {
    for (const auto& e : fs::directory_iterator(path))
      if (e.path().extension() == ".yaml") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    // A folder without recipes checked nothing and passed (exit 0).
    if (files.empty())
      throw UserError("--recipes '" + path + "': no *.yaml recipe files in the folder");
  } else {
    files.push_back(path);
  }
  std::vector<RecipeSource> out;
  for (const auto& f : files) {
    try {
      out.push_back(read_source(f));
    } catch (const YAML::Exception& e) {
      throw UserError(f + ": " + e.what());
    }
  }
  return out;
}

bool matches(const RecipeLayout& r, const planner::Candidate& c) {
  const strategy::Layout& l = c.layout;
  const bool interleaved = strategy::pipeline_schedule_flavour(l.schedule).interleaves();
  const int vp = interleaved ? l.virtual_stages : 1;
  if (l.tp != r.tp || l.pp != r.pp || l.cp != r.cp || l.ep != r.ep || l.etp != r.etp ||
      vp != r.vp || c.training.micro_batch != r.micro_batch)
    return false;
  if (l.pp > 1 && l.schedule != r.expected_schedule()) return false;
  // Without data-parallel ranks the flavour shards nothing: any matches.
  if (r.data_parallel && l.dp * l.cp > 1 && l.data_parallel != *r.data_parallel) return false;
  return !r.recompute || c.training.recompute == *r.recompute;
}

std::string free_knobs(const RecipeLayout& r) {
  std::string s;
  if (!r.data_parallel) s += "data-parallel flavour, ";
  if (!r.recompute) s += "recompute, ";
  return s + "bucket size, stage split";
}

std::string describe(const RecipeLayout& r) {
  std::string s = "tp" + std::to_string(r.tp);
  if (r.cp > 1) s += " cp" + std::to_string(r.cp);
  s += " pp" + std::to_string(r.pp);
  if (r.vp > 1) s += " vp" + std::to_string(r.vp);
  if (r.ep > 1) s += " ep" + std::to_string(r.ep);
  if (r.etp > 1) s += " etp" + std::to_string(r.etp);
  s += " mb" + std::to_string(r.micro_batch);
  if (r.pp > 1 && r.schedule) s += " " + std::string(strategy::to_string(*r.schedule));
  if (r.data_parallel) s += " " + std::string(strategy::to_string(*r.data_parallel));
  if (r.recompute) s += " rc:" + std::string(model::to_string(*r.recompute));
  return s;
}

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::top5:
      return "top 5";
    case Verdict::beaten:
      return "beaten";
    case Verdict::does_not_fit:
      return "does not fit";
    case Verdict::not_searched:
      return "not in the search space";
    case Verdict::missed:
      return "missed";
    case Verdict::not_expressible:
      return "not expressible";
  }
  return "?";
}

bool is_failure(Verdict v) {
  return v == Verdict::does_not_fit || v == Verdict::not_searched || v == Verdict::missed;
}

PricedLayout priced_layout(const planner::Candidate& c, const planner::Evaluation& e) {
  return {c.describe(),
          e.step_time.seconds(),
          e.peak_memory,
          e.compute.seconds(),
          e.exposed_communication.seconds(),
          e.idle.seconds()};
}

std::string beaten_reason(const PricedLayout& winner, const PricedLayout& recipe) {
  char head[160];
  std::snprintf(head, sizeof head, "%.1f%% faster",
                100.0 * (recipe.step_seconds / winner.step_seconds - 1.0));
  std::string s = "beaten: " + winner.layout + " is " + head + " than the recipe's " +
                  recipe.layout + " (" + seconds_text(winner.step_seconds) + " vs " +
                  seconds_text(recipe.step_seconds) + " per step):";
  // Where the time goes per rank: the parts the winner saves (or spends), largest first; a part
  // moving by under 1% of the recipe's step is not a reason.
  struct Part {
    const char* what;
    double saved;
  };
  std::vector<Part> parts{
      {"compute", recipe.compute_seconds - winner.compute_seconds},
      {"exposed communication", recipe.exposed_seconds - winner.exposed_seconds},
      {"idle time (pipeline bubble and waits)", recipe.idle_seconds - winner.idle_seconds}};
  std::stable_sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) {
    return std::abs(a.saved) > std::abs(b.saved);
  });
  std::string why;
  for (const Part& p : parts) {
    if (std::abs(p.saved) < 0.01 * recipe.step_seconds) continue;
    why += (why.empty() ? " " : ", ") + seconds_text(std::abs(p.saved)) +
           (p.saved > 0 ? " less " : " more ") + p.what;
  }
  if (why.empty()) why = " no part of the step moves by 1% or more";
  return s + why + "; at " + format_gib(winner.peak_memory) + " against " +
         format_gib(recipe.peak_memory);
}

namespace {

// Why the plan's enumeration has no layout matching the recipe: the first of the search space's
// limits it crosses, else the strategy's own refusal.
std::string why_not_enumerated(const Recipe& r, const scenario::Scenario& base,
                               const planner::PlanSpace& space) {
  const RecipeLayout& l = r.layout;
  const int node = base.cluster.node.gpus;
  const int max_tp = space.max_tp ? space.max_tp : node;
  if (space.max_virtual_stages > 0 && l.vp > space.max_virtual_stages)
    return "VP " + std::to_string(l.vp) + " beyond the plan's cap of " +
           std::to_string(space.max_virtual_stages) +
           " virtual stages (PlanSpace::max_virtual_stages)";
  if (std::find(space.micro_batches.begin(), space.micro_batches.end(), l.micro_batch) ==
      space.micro_batches.end())
    return "micro-batch " + std::to_string(l.micro_batch) +
           " not among the plan's micro-batch sizes";
  const std::vector<model::Recompute> recomputes =
      planner::recompute_options(space, base.training.stack);
  if (l.recompute &&
      std::find(recomputes.begin(), recomputes.end(), *l.recompute) == recomputes.end())
    return "recompute " + std::string(model::to_string(*l.recompute)) +
           " not among the plan's recompute options";
  if (l.tp > max_tp)
    return "TP " + std::to_string(l.tp) + " beyond the plan's TP cap of " + std::to_string(max_tp);
  if (l.cp > space.max_cp || (l.cp & (l.cp - 1)) != 0)
    return "CP " + std::to_string(l.cp) + " not a power of two up to " +
           std::to_string(space.max_cp);
  if (space.max_ep && l.ep > space.max_ep) return "EP beyond the plan's cap";
  if (l.schedule && !space.zero_bubble && *l.schedule == strategy::PipelineSchedule::zb_h1)
    return "ZB-H1 is off in the plan's search";
  const int dp = r.gpus / std::max(1, l.tp * l.pp * l.cp);
  // Pose it as the plan would and let the strategy say what it refuses.
  strategy::Layout layout = base.layout;
  layout.tp = l.tp, layout.pp = l.pp, layout.cp = l.cp, layout.ep = l.ep, layout.etp = l.etp;
  layout.dp = dp;
  layout.schedule = l.expected_schedule();
  layout.virtual_stages = l.vp;
  layout.sequence_parallel = l.tp > 1;
  if (l.data_parallel) layout.data_parallel = *l.data_parallel;
  strategy::TrainingSpec training = base.training;
  training.micro_batch = l.micro_batch;
  if (l.recompute) training.recompute = *l.recompute;
  try {
    strategy::validate(layout, training, base.model, base.gpus);
  } catch (const UserError& e) {
    return std::string("the layout is refused: ") + e.what();
  }
  return "the plan's enumeration does not generate it (a data-parallel flavour, schedule or "
         "expert split it leaves out)";
}

// "optimizer_state (31.53 GiB of 90.12 GiB)": what dominates a memory breakdown.
std::string dominant_part(const std::array<int64_t, ir::kMemoryCategoryCount>& at_peak) {
  const auto best = planner::dominant_category(at_peak);
  int64_t total = 0;
  for (int64_t b : at_peak) total += b;
  return std::string(ir::to_string(best)) + " (" + format_gib(at_peak[static_cast<size_t>(best)]) +
         " of " + format_gib(total) + ")";
}

std::string dominant_part(const planner::MemoryBound& b) {
  const std::pair<const char*, int64_t> parts[] = {{"parameters", b.parameters},
                                                   {"gradients", b.gradients},
                                                   {"optimizer state", b.optimizer_state},
                                                   {"activations", b.activations}};
  const auto* best =
      std::max_element(std::begin(parts), std::end(parts),
                       [](const auto& x, const auto& y) { return x.second < y.second; });
  return std::string(best->first) + " (" + format_gib(best->second) + " of " +
         format_gib(b.total()) + ")";
}

// The plan's matching candidates by their fate: simulated (evaluation indices), priced (not
// simulated; best price first), pruned by the memory bound.
struct Matches {
  std::vector<size_t> evaluated, priced;
  std::vector<const planner::Pruned*> pruned;
};

Matches find_matches(const RecipeLayout& l, const planner::PlanResult& r) {
  const auto& cands = r.enumeration.candidates;
  Matches m;
  std::set<size_t> simulated;
  for (size_t k = 0; k < r.evaluations.size(); ++k) {
    simulated.insert(r.evaluations[k].candidate);
    if (matches(l, cands[r.evaluations[k].candidate])) m.evaluated.push_back(k);
  }
  for (const planner::Priced& p : r.priced)
    if (!simulated.count(p.candidate) && matches(l, cands[p.candidate]))
      m.priced.push_back(p.candidate);
  for (const planner::Pruned& p : r.pruned)
    if (matches(l, cands[p.candidate])) m.pruned.push_back(&p);
  return m;
}

// The matches price_recipe simulates when none the plan simulated fits: the three best-priced,
// and the best-priced with full recomputation (the recipe's leanest variant where it leaves
// recomputation unstated), so that a recipe is not called out of memory for a knob it never set.
std::vector<size_t> tries_when_none_fits(const planner::PlanResult& r, const Matches& m) {
  std::vector<size_t> out;
  for (size_t k = 0; k < m.priced.size() && k < 3; ++k) out.push_back(k);
  for (size_t k = 3; k < m.priced.size(); ++k) {
    const auto& c = r.enumeration.candidates[m.priced[k]];
    if (c.training.recompute == model::Recompute::full) {
      out.push_back(k);
      break;
    }
  }
  return out;
}

// Those tries simulated in detail, as the plan's last level: they fit as the plan's own layouts
// must, in the usable memory with the headroom left free.
std::vector<planner::Evaluation> simulate_tries(const scenario::Scenario& base,
                                                const planner::PlanResult& r, const Matches& m) {
  scenario::Scenario analytic = base;  // as the plan simulates: representative ranks need it
  analytic.fidelity = cost::NetworkFidelity::analytic;
  const driver::Platform platform(analytic);
  std::vector<planner::Evaluation> out;
  for (size_t k : tries_when_none_fits(r, m)) {
    const planner::Candidate& c = r.enumeration.candidates[m.priced[k]];
    try {
      const auto sim =
          driver::simulate(planner::with_candidate(base, c),
                           {false, false, driver::RankMode::automatic, false, false}, &platform);
      out.push_back(planner::summarise(sim, m.priced[k], true, r.usable_memory));
    } catch (const std::exception&) {
      // a layout the simulator refuses is not the recipe's price
    }
  }
  return out;
}

// The recipe's layout priced: the fastest fitting variant, else the leanest that does not fit;
// and a faster variant that fits in the GPU's memory but not beside the headroom, if any.
struct RecipePrice {
  planner::Evaluation priced;
  std::optional<planner::Evaluation> inside_headroom;
};

// The best-fitting simulated match, else the tries simulated here. Nothing when none could be
// simulated.
std::optional<RecipePrice> price_recipe(const scenario::Scenario& base,
                                        const planner::PlanResult& r, const Matches& m) {
  std::vector<planner::Evaluation> evals;
  for (size_t k : m.evaluated)
    if (r.evaluations[k].error.empty()) evals.push_back(r.evaluations[k]);
  if (std::none_of(evals.begin(), evals.end(), [](const auto& e) { return e.fits; })) {
    const std::vector<planner::Evaluation> tries = simulate_tries(base, r, m);
    evals.insert(evals.end(), tries.begin(), tries.end());
  }
  if (evals.empty()) return std::nullopt;
  RecipePrice out{*std::min_element(evals.begin(), evals.end(),
                                    [](const auto& a, const auto& b) {
                                      if (a.fits != b.fits) return a.fits;
                                      return a.fits ? a.step_time < b.step_time
                                                    : a.peak_memory < b.peak_memory;
                                    }),
                  std::nullopt};
  const int64_t capacity = driver::device_of(base).memory_capacity.count;
  for (const planner::Evaluation& e : evals) {
    const bool faster = !out.priced.fits || e.step_time < out.priced.step_time;
    if (!e.fits && e.peak_memory <= capacity && faster &&
        (!out.inside_headroom || e.step_time < out.inside_headroom->step_time))
      out.inside_headroom = e;
  }
  return out;
}

// "177.56 GiB > 175.78 GiB usable (185.03 GiB less the 9.25 GiB headroom)": the plan's limit.
std::string gib_over(int64_t bytes, int64_t usable, int64_t capacity) {
  return format_gib(bytes) + " > " + format_gib(usable) + " usable (" + format_gib(capacity) +
         " less the " + format_gib(capacity - usable) + " headroom)";
}

// Why the plan did not rank a recipe layout that fits: its fast level judged every variant it
// simulated not to fit, or it never simulated it (where the closed-form price put it).
std::string why_missed(const planner::PlanResult& r, const Matches& m, size_t candidate) {
  if (!m.evaluated.empty())
    return "the plan simulated " + std::to_string(m.evaluated.size()) +
           " of its variants and found none fitting";
  size_t at = 0;
  while (at < r.priced.size() && r.priced[at].candidate != candidate) ++at;
  return "the plan did not simulate it (closed-form price rank " + std::to_string(at + 1) + " of " +
         std::to_string(r.priced.size()) + ")";
}

// "; its tp1 ... rc:none variant runs in 9.61 s at 177.56 GiB, fitting the GPU but not beside the
// headroom": why a faster variant of the recipe is not its price.
std::string headroom_note(const planner::Candidate& c, const planner::Evaluation& e,
                          int64_t usable) {
  return "; its " + c.describe() + " runs in " + seconds_text(e.step_time.seconds()) + " at " +
         format_gib(e.peak_memory) + ", within the GPU's memory but above the " +
         format_gib(usable) + " the headroom leaves";
}

// The recipe's price where the plan did not rank it: `out.recipe` set, with the note on a faster
// variant the headroom rules out; or the verdict where it does not fit. Returns the candidate
// priced, or nothing when the verdict is given.
std::optional<size_t> price_unranked(RecipeCheck& out, std::string& note,
                                     const scenario::Scenario& base, const planner::PlanResult& r,
                                     const Matches& m) {
  const auto& cands = r.enumeration.candidates;
  const int64_t capacity = driver::device_of(base).memory_capacity.count;
  const auto priced = price_recipe(base, r, m);
  if (!priced) {
    // Every match was pruned by the memory bound (or none could be simulated).
    const auto leanest = std::min_element(m.pruned.begin(), m.pruned.end(), [](auto* a, auto* b) {
      return a->bound.total() < b->bound.total();
    });
    out.verdict = leanest == m.pruned.end() ? Verdict::not_searched : Verdict::does_not_fit;
    out.text = leanest == m.pruned.end()
                   ? "not in the search space: none of its layouts could be simulated"
                   : "recipe does not fit by our count: " +
                         gib_over((*leanest)->bound.total(), r.usable_memory, capacity) +
                         " by the memory lower bound; dominated by " +
                         dominant_part((*leanest)->bound);
    return std::nullopt;
  }
  const planner::Evaluation& e = priced->priced;
  out.recipe = priced_layout(cands[e.candidate], e);
  if (!e.fits) {
    out.verdict = Verdict::does_not_fit;
    out.text =
        "recipe does not fit by our count: " + gib_over(e.peak_memory, r.usable_memory, capacity) +
        " simulated (" + cands[e.candidate].describe() + "); dominated by " +
        dominant_part(e.at_peak);
    return std::nullopt;
  }
  if (priced->inside_headroom)
    note = headroom_note(cands[priced->inside_headroom->candidate], *priced->inside_headroom,
                         r.usable_memory);
  return e.candidate;
}

// The verdict once the plan has run and the recipe's layout is among its candidates.
void judge(RecipeCheck& out, const scenario::Scenario& base, const Recipe& recipe,
           const planner::PlanResult& r, const Matches& m) {
  const auto& cands = r.enumeration.candidates;
  size_t recipe_candidate = 0;
  for (size_t k = 0; k < r.ranked.size(); ++k) {
    const planner::Evaluation& e = r.evaluations[r.ranked[k]];
    if (!matches(recipe.layout, cands[e.candidate])) continue;
    out.rank = static_cast<int>(k) + 1;
    out.recipe = priced_layout(cands[e.candidate], e);
    recipe_candidate = e.candidate;
    break;
  }
  if (!r.ranked.empty()) {
    const planner::Evaluation& w = r.evaluations[r.ranked[0]];
    out.winner = priced_layout(cands[w.candidate], w);
  }
  if (out.rank >= 1 && out.rank <= 5) {
    out.verdict = Verdict::top5;
    out.text = "top 5 (rank " + std::to_string(out.rank) + ")";
    return;
  }
  std::string note;  // a faster variant of the recipe that only the headroom rules out
  if (!out.recipe) {
    const std::optional<size_t> priced = price_unranked(out, note, base, r, m);
    if (!priced) return;
    recipe_candidate = *priced;
  }
  if (out.winner && out.winner->step_seconds < out.recipe->step_seconds) {
    out.verdict = Verdict::beaten;
    out.text = beaten_reason(*out.winner, *out.recipe) + note;
    // Ranked among the layouts within the expected error of the fastest: a tie the plan ordered
    // by robustness (PlanResult::tied), not a difference the model resolves.
    if (out.rank > 5 && static_cast<size_t>(out.rank) <= r.tied)
      out.text +=
          "; within the model's expected error of the winner, a tie the plan orders by "
          "robustness";
    return;
  }
  out.verdict = Verdict::missed;
  out.text = "missed: the recipe's " + out.recipe->layout + " fits (" +
             seconds_text(out.recipe->step_seconds) + " per step at " +
             format_gib(out.recipe->peak_memory) + ")" +
             (out.winner ? " and beats the plan's winner " + out.winner->layout + " (" +
                               seconds_text(out.winner->step_seconds) + ")"
                         : " where the plan ranks no layout") +
             "; " + why_missed(r, m, recipe_candidate) + note;
}

}  // namespace

RecipeCheck check_recipe(const Recipe& recipe, const planner::PlanOptions& options) {
  RecipeCheck out;
  out.chosen = free_knobs(recipe.layout);
  if (!recipe.not_expressible.empty()) {
    out.text = "not expressible: " + recipe.not_expressible;
    return out;
  }
  scenario::Scenario base;
  try {
    base = planner::preset_scenario({recipe.model, recipe.cluster, recipe.gpus, recipe.global_batch,
                                     recipe.seq, recipe.precision, model::AttentionImpl::fused});
  } catch (const UserError& e) {
    out.text = std::string("not expressible: ") + e.what();
    return out;
  }
  base.training.stack = recipe.stack;  // as `plan --stack`: the planner applies its overlaps
  base.training.grad_reduce_in_bf16 = recipe.grad_reduce_in_bf16;
  base.training.bf16_optimizer_moments = recipe.bf16_optimizer_moments;
  driver::apply_default_profile(base);  // as `plan` prices: the GPU's shipped profile if any
  const planner::PlanSpace space;
  // The enumeration alone says whether the plan could find the recipe at all (and costs little).
  const auto enumerated = planner::enumerate_layouts(base, space).candidates;
  if (std::none_of(enumerated.begin(), enumerated.end(),
                   [&](const planner::Candidate& c) { return matches(recipe.layout, c); })) {
    out.verdict = Verdict::not_searched;
    out.text = "not in the search space: " + why_not_enumerated(recipe, base, space);
    return out;
  }
  // As `plan` runs: ties within the profile's expected error, folded near-duplicates.
  planner::PlanOptions plan_options = options;
  plan_options.take_expected_error(base);
  const planner::PlanResult r = planner::plan(base, space, plan_options);
  out.plan_seconds = r.seconds;
  if (!r.not_simulated.empty()) {
    out.verdict = Verdict::not_searched;
    out.text = "not in the search space: the plan simulates nothing (" + r.not_simulated + ")";
    return out;
  }
  const Matches m = find_matches(recipe.layout, r);
  judge(out, base, recipe, r, m);
  return out;
}

namespace {

struct Checked {
  const RecipeSource* source;
  const Recipe* recipe;
  RecipeCheck check;
};

nlohmann::json priced_json(const std::optional<PricedLayout>& p) {
  if (!p) return nullptr;
  return {{"layout", p->layout},
          {"step_seconds", p->step_seconds},
          {"peak_memory_bytes", p->peak_memory},
          {"compute_seconds", p->compute_seconds},
          {"exposed_communication_seconds", p->exposed_seconds},
          {"idle_seconds", p->idle_seconds}};
}

void write_json(const std::string& path, const std::vector<RecipeSource>& sources,
                const std::vector<Checked>& checked) {
  nlohmann::json out = {{"sources", nlohmann::json::array()}, {"recipes", nlohmann::json::array()}};
  for (const auto& s : sources)
    out["sources"].push_back(
        {{"source", s.name}, {"file", s.file}, {"citation", s.citation}, {"licence", s.licence}});
  for (const auto& c : checked) {
    const Recipe& r = *c.recipe;
    out["recipes"].push_back(
        {{"source", c.source->name},
         {"name", r.name},
         {"model", r.model},
         {"cluster", r.cluster},
         {"gpus", r.gpus},
         {"seq", r.seq},
         {"global_batch", r.global_batch},
         {"precision", model::to_string(r.precision)},
         {"stack", model::to_string(r.stack)},
         {"layout", describe(r.layout)},
         {"free_knobs", c.check.chosen},
         {"published_tokens_per_s_per_gpu", r.published_tokens_per_second_per_gpu},
         {"verdict", to_string(c.check.verdict)},
         {"failure", is_failure(c.check.verdict)},
         {"rank", c.check.rank},
         {"text", c.check.text},
         {"winner", priced_json(c.check.winner)},
         {"recipe", priced_json(c.check.recipe)}});
  }
  OutputFile file(path);
  file.stream() << out.dump(2) << "\n";
  file.commit();
}

void print_row(std::ostream& out, const Checked& c) {
  const Recipe& r = *c.recipe;
  char cells[160];
  std::snprintf(cells, sizeof cells, "%-44s %-36s ", r.name.c_str(),
                r.not_expressible.empty() ? describe(r.layout).c_str() : "-");
  out << cells << c.check.text << "\n";
}

// One row per source: how many recipes got each verdict.
void print_markdown_summary(std::ostream& out, const std::vector<RecipeSource>& sources,
                            const std::vector<Checked>& checked) {
  out << "| source | recipes | top 5 | beaten (with the reason) | failures | not expressible |\n"
         "|---|---|---|---|---|---|\n";
  for (const RecipeSource& s : sources) {
    std::map<Verdict, int> n;
    int failures = 0;
    for (const Checked& c : checked) {
      if (c.source != &s) continue;
      ++n[c.check.verdict];
      failures += is_failure(c.check.verdict) ? 1 : 0;
    }
    out << "| `" << s.name << "` | " << s.recipes.size() << " | " << n[Verdict::top5] << " | "
        << n[Verdict::beaten] << " | " << failures << " | " << n[Verdict::not_expressible]
        << " |\n";
  }
}

// One row per recipe; "priced as" is the matched layout with the knobs the plan chose (recompute,
// bucket size, stage split, and the flavour where the recipe is silent).
void print_markdown_rows(std::ostream& out, const std::vector<Checked>& checked) {
  out << "| recipe | source | layout | priced as | rank | verdict |\n|---|---|---|---|---|---|\n";
  for (const Checked& c : checked) {
    const Recipe& r = *c.recipe;
    out << "| " << r.name << " | `" << c.source->name << "` | "
        << (r.not_expressible.empty() ? "`" + describe(r.layout) + "`" : std::string("-")) << " | "
        << (c.check.recipe ? "`" + c.check.recipe->layout + "`" : std::string("-")) << " | "
        << (c.check.rank ? std::to_string(c.check.rank) : std::string("-")) << " | " << c.check.text
        << " |\n";
  }
}

}  // namespace

int check_recipes(const RecipeCheckRequest& a, std::ostream& out) {
  const std::vector<RecipeSource> sources = load_recipe_sources(a.path);
  planner::PlanOptions options;
  options.threads = a.threads;
  std::vector<Checked> checked;
  std::map<Verdict, int> counts;
  for (const RecipeSource& s : sources) {
    if (!a.markdown) out << "\n" << s.name << " (" << s.file << ", " << s.licence << ")\n";
    for (const Recipe& r : s.recipes) {
      checked.push_back({&s, &r, check_recipe(r, options)});
      if (!a.markdown) print_row(out, checked.back());
      out << std::flush;
      ++counts[checked.back().check.verdict];
    }
  }
  int failures = 0;
  for (const auto& [v, n] : counts) failures += is_failure(v) ? n : 0;
  if (!a.json.empty()) write_json(a.json, sources, checked);
  if (a.markdown) {
    print_markdown_summary(out, sources, checked);
    out << "\n";
    print_markdown_rows(out, checked);
  } else {
    out << "\nrecipes     " << checked.size() << ":";
    for (const auto& [v, n] : counts)
      out << " " << n << " " << to_string(v) << (v == counts.rbegin()->first ? "" : ",");
    out << "\nfailures    " << failures
        << " (does not fit, not in the search space, missed); allowed " << a.max_failures << "\n";
  }
  return failures > a.max_failures ? 1 : 0;
}

}  // namespace cs::workflows
