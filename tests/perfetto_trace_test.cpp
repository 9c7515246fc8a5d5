// Perfetto protobuf traces (.pftrace), read back with the schema of Perfetto's own protos
// (tests/proto/perfetto_trace_subset.proto) the way Perfetto's reader takes them: interned names
// defined before use on one sequence whose first packet clears the state, each track's slices
// begun and ended in turn, and the same slices, arrows and counters as the Chrome JSON trace.
#include "sim/perfetto_trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "driver/simulation.h"
#include "proto/perfetto_trace_subset.pb.h"
#include "small_trace_run.h"
#include "test_paths.h"

namespace cs {
namespace {

namespace pf = perfetto_subset;

struct Slice {
  std::string name, category, track;
  int64_t pid = 0;
  uint64_t begin = 0, end = 0;  // ns
  std::map<std::string, std::string> args;
  std::vector<uint64_t> flows, terminating;
};

// A decoded trace, checked as it is read: what Perfetto would reject or misread fails the test.
struct ReadTrace {
  std::vector<Slice> slices;                                                 // in begin order
  std::map<std::string, std::vector<std::pair<uint64_t, double>>> counters;  // by track name
  std::map<int64_t, std::string> processes;                                  // pid -> name
  std::set<std::string> stream_tracks;                                       // "<pid>/<name>"
};

ReadTrace read(const std::string& bytes) {
  pf::Trace trace;
  EXPECT_TRUE(trace.ParseFromString(bytes));
  ReadTrace out;
  std::map<uint64_t, std::string> names, categories, annotation_names, strings;
  struct Track {
    std::string name;
    int64_t pid = 0;
    bool counter = false;
    std::optional<size_t> open;  // the slice begun and not ended
    uint64_t last = 0;           // the latest event's time
  };
  std::map<uint64_t, Track> tracks;
  std::map<uint64_t, int64_t> pid_of_process;
  for (int i = 0; i < trace.packet_size(); ++i) {
    const pf::TracePacket& p = trace.packet(i);
    EXPECT_EQ(p.trusted_packet_sequence_id(), 1u);
    if (i == 0) EXPECT_EQ(p.sequence_flags(), 1u);  // clears the incremental state
    const auto& in = p.interned_data();
    if (p.has_interned_data() && i > 0) EXPECT_EQ(p.sequence_flags(), 2u);
    for (const auto& e : in.event_names()) names[e.iid()] = e.name();
    for (const auto& e : in.event_categories()) categories[e.iid()] = e.name();
    for (const auto& e : in.debug_annotation_names()) annotation_names[e.iid()] = e.name();
    for (const auto& e : in.debug_annotation_string_values()) strings[e.iid()] = e.str();
    if (p.has_track_descriptor()) {
      const auto& d = p.track_descriptor();
      if (d.has_process()) {
        pid_of_process[d.uuid()] = d.process().pid();
        out.processes[d.process().pid()] = d.process().process_name();
        continue;
      }
      EXPECT_TRUE(pid_of_process.count(d.parent_uuid())) << "parent described first";
      tracks[d.uuid()] = {d.name(), pid_of_process[d.parent_uuid()], d.has_counter(), {}};
      if (!d.has_counter())
        out.stream_tracks.insert(std::to_string(tracks[d.uuid()].pid) + "/" + d.name());
      continue;
    }
    if (!p.has_track_event()) continue;
    const pf::TrackEvent& e = p.track_event();
    EXPECT_TRUE(tracks.count(e.track_uuid())) << "track described before its events";
    Track& track = tracks[e.track_uuid()];
    // Perfetto sorts events by time, ties in file order: a track's events must already be in
    // time order for its slices to come out begun and ended in turn.
    EXPECT_GE(p.timestamp(), track.last) << track.name;
    track.last = p.timestamp();
    if (e.type() == pf::TrackEvent::TYPE_COUNTER) {
      EXPECT_TRUE(track.counter);
      out.counters[track.name].emplace_back(p.timestamp(), e.double_counter_value());
    } else if (e.type() == pf::TrackEvent::TYPE_SLICE_BEGIN) {
      EXPECT_FALSE(track.open) << "a slice begins before the last one on its track ended";
      EXPECT_EQ(p.sequence_flags(), 2u);  // it uses interned names
      Slice s;
      EXPECT_TRUE(names.count(e.name_iid())) << "name interned before use";
      s.name = names[e.name_iid()];
      EXPECT_EQ(e.category_iids_size(), 1);
      s.category = categories.at(e.category_iids(0));
      s.track = track.name;
      s.pid = track.pid;
      s.begin = p.timestamp();
      for (const auto& a : e.debug_annotations()) {
        const std::string key = annotation_names.at(a.name_iid());
        s.args[key] = a.has_string_value_iid() ? strings.at(a.string_value_iid())
                      : a.has_int_value()      ? std::to_string(a.int_value())
                                               : std::to_string(a.double_value());
      }
      s.flows.assign(e.flow_ids().begin(), e.flow_ids().end());
      s.terminating.assign(e.terminating_flow_ids().begin(), e.terminating_flow_ids().end());
      track.open = out.slices.size();
      out.slices.push_back(s);
    } else {
      EXPECT_EQ(e.type(), pf::TrackEvent::TYPE_SLICE_END);
      EXPECT_TRUE(track.open) << "an end without a begin on " << track.name;
      if (!track.open) continue;
      out.slices[*track.open].end = p.timestamp();
      EXPECT_GE(p.timestamp(), out.slices[*track.open].begin);
      track.open.reset();
    }
  }
  for (const auto& [uuid, track] : tracks) EXPECT_FALSE(track.open) << track.name << " left open";
  return out;
}

std::string perfetto_bytes(const ir::TaskGraph& g, const sim::Timeline& tl,
                           const sim::TraceOptions& o) {
  std::ostringstream out;
  sim::write_perfetto_trace(out, g, tl, o);
  return out.str();
}

// The hand-derived run of tests/small_trace_run.h: compute [0, 10] us on both ranks, the
// all-reduce [10, 110] on both, the transfer [10, 40] from rank 0 to rank 1.
TEST(PerfettoTrace, SlicesArrowsAndCountersOfASmallRun) {
  const test::SmallRun run;
  const ReadTrace t = read(perfetto_bytes(run.g, run.tl, run.options()));
  EXPECT_EQ(t.processes.at(0), "rank 0");
  EXPECT_EQ(t.processes.at(1), "rank 1");
  EXPECT_EQ(t.processes.at(2),
            "network (mean utilisation of the links of each kind that carried traffic)");
  EXPECT_TRUE(t.stream_tracks.count("1/pp.recv"));
  ASSERT_EQ(t.slices.size(), 6u);  // compute and all-reduce on both ranks, the send, the receive
  std::map<std::pair<int64_t, std::string>, Slice> by;
  for (const Slice& s : t.slices) by[{s.pid, s.name}] = s;
  const Slice& fwd = by.at({1, "fwd"});
  EXPECT_EQ(fwd.category, "compute");
  EXPECT_EQ(fwd.track, "compute");
  EXPECT_EQ(fwd.begin, 0u);
  EXPECT_EQ(fwd.end, 10'000u);  // 10 us in ns
  EXPECT_EQ(fwd.args.at("phase"), "forward");
  EXPECT_EQ(fwd.args.at("layer"), "0");
  EXPECT_EQ(fwd.args.at("micro_batch"), "0");
  const Slice& send = by.at({0, "send"});
  const Slice& recv = by.at({1, "recv"});
  EXPECT_EQ(send.begin, 10'000u);
  EXPECT_EQ(send.end, 40'000u);
  EXPECT_EQ(send.args.at("bytes"), "30");
  EXPECT_EQ(send.args.at("to"), "1");
  EXPECT_EQ(recv.args.at("from"), "0");
  // The transfer's arrow: begun at the send, ended at the receive; transfer 0's id is 0.
  EXPECT_EQ(send.flows, std::vector<uint64_t>{0});
  EXPECT_EQ(recv.terminating, std::vector<uint64_t>{0});
  // The all-reduce's (collective 0: id 1): both start at 10 us, rank 0's task comes first.
  EXPECT_EQ(by.at({0, "ar"}).flows, std::vector<uint64_t>{1});
  EXPECT_EQ(by.at({1, "ar"}).terminating, std::vector<uint64_t>{1});
  EXPECT_EQ(by.at({1, "ar"}).args.at("collective"), "all_reduce");
  EXPECT_EQ(by.at({1, "ar"}).end, 110'000u);
  // Memory: every category at the first sample (1 GiB of activations at 0), nothing after.
  const auto& activations = t.counters.at("memory GiB activations");
  ASSERT_EQ(activations.size(), 2u);  // one track per rank, both named alike
  EXPECT_EQ(activations[0], std::make_pair(uint64_t{0}, 1.0));
  EXPECT_EQ(t.counters.at("memory GiB parameters")[0].second, 0.0);
  // Links (as the JSON test derives): NVLink 50% over [10, 110], InfiniBand 100% over [10, 40];
  // only a series that changes gets a point.
  using Points = std::vector<std::pair<uint64_t, double>>;
  EXPECT_EQ(t.counters.at("link utilisation % nvlink"), (Points{{10'000, 50.0}, {110'000, 0.0}}));
  EXPECT_EQ(t.counters.at("link utilisation % infiniband"),
            (Points{{10'000, 100.0}, {40'000, 0.0}}));
}

// The same slices as the Chrome trace (name, rank, stream, start and end to the nanosecond, phase)
// and the same arrows (each arrow's members, one end), on the seed DDP step and a two-stage
// pipeline (sends and receives). Checked by hand on six more shipped scenarios, CP 16 and
// DeepSeek-V3 among them, at 4-9 s each.
void expect_same_as_chrome_trace(const std::string& scenario_name) {
  SCOPED_TRACE(scenario_name);
  const auto s = scenario::load_scenario(cs::test_paths::source_dir() + "/scenarios/" +
                                         scenario_name + ".yaml");
  const auto r = driver::simulate(s, {.with_baseline = false});
  std::ostringstream json;
  sim::write_chrome_trace(json, r.step.graph, r.timeline, sim::TraceOptions{});
  const auto doc = nlohmann::json::parse(json.str());
  const ReadTrace t = read(perfetto_bytes(r.step.graph, r.timeline, sim::TraceOptions{}));
  std::map<int64_t, std::string> thread_names;  // tid -> stream (the same on every rank)
  std::multiset<std::string> expected, got;
  std::map<uint64_t, std::multiset<std::string>> json_arrows, pf_arrows;
  // The JSON's times are exact decimals of picoseconds; the .pftrace rounds each to the ns.
  auto ps = [](const nlohmann::json& us) { return std::llround(us.get<double>() * 1e6); };
  auto ns = [](int64_t ps) { return std::to_string((ps + 500) / 1000); };
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name")
      thread_names[e.at("tid").get<int64_t>()] = e.at("args").at("name");
    if (e.at("ph") != "X") continue;
    const std::string key =
        e.at("name").get<std::string>() + "|" + std::to_string(e.at("pid").get<int64_t>()) + "|" +
        thread_names.at(e.at("tid").get<int64_t>()) + "|" + ns(ps(e.at("ts"))) + "|" +
        ns(ps(e.at("ts")) + ps(e.at("dur"))) + "|" + e.at("args").at("phase").get<std::string>();
    expected.insert(key);
    if (e.contains("bind_id")) json_arrows[e.at("bind_id")].insert(key);
  }
  size_t begins = 0, ends = 0;
  for (const Slice& sl : t.slices) {
    const std::string key = sl.name + "|" + std::to_string(sl.pid) + "|" + sl.track + "|" +
                            std::to_string(sl.begin) + "|" + std::to_string(sl.end) + "|" +
                            sl.args.at("phase");
    got.insert(key);
    for (uint64_t id : sl.flows) pf_arrows[id].insert(key);
    for (uint64_t id : sl.terminating) pf_arrows[id].insert(key);
    begins += sl.flows.size();
    ends += sl.terminating.size();
  }
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(got, expected);
  EXPECT_EQ(pf_arrows, json_arrows);
  EXPECT_EQ(ends, json_arrows.size());  // each arrow ends once
  EXPECT_GE(begins, json_arrows.size());
}

TEST(PerfettoTrace, SameSlicesAndArrowsAsTheChromeTrace) {
  expect_same_as_chrome_trace("gpt2-large-2xh100-ddp");
  expect_same_as_chrome_trace("cpu-gpt-tiny-2stage-pp");
}

// `--trace FILE.pftrace` writes the protobuf trace; any other name the Chrome JSON.
TEST(PerfettoTrace, TheFileNameChoosesTheFormat) {
  const test::SmallRun run;
  EXPECT_TRUE(sim::is_perfetto_trace_path("t.pftrace"));
  EXPECT_TRUE(sim::is_perfetto_trace_path("dir/t.perfetto-trace"));
  EXPECT_FALSE(sim::is_perfetto_trace_path("t.json"));
  EXPECT_FALSE(sim::is_perfetto_trace_path(".pftrace.json.gz"));
  const auto dir = std::filesystem::temp_directory_path();
  const std::string pid = std::to_string(::getpid());
  const std::string pf = (dir / ("cs_pf_" + pid + ".pftrace")).string();
  const std::string js = (dir / ("cs_pf_" + pid + ".json")).string();
  sim::write_trace_file(pf, run.g, run.tl, run.options());
  sim::write_trace_file(js, run.g, run.tl, run.options());
  auto slurp = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string pf_bytes = slurp(pf), js_bytes = slurp(js);
  std::filesystem::remove(pf);
  std::filesystem::remove(js);
  EXPECT_EQ(pf_bytes, perfetto_bytes(run.g, run.tl, run.options()));
  EXPECT_EQ(js_bytes.substr(0, 2), "{\"");
}

}  // namespace
}  // namespace cs
