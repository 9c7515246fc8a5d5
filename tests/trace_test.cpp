// Chrome traces: the seed 002 DDP scenario's trace is valid trace-event JSON with one process per
// rank, one thread per stream, one complete event per non-memory task and a memory counter; on a
// hand-built two-rank graph, the flow pairs, the memory and link counters, the rank and time
// filters and the .gz round trip are checked against values derived by hand.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/error.h"
#include "driver/simulation.h"
#include "error_of.h"
#include "fixed_cost_model.h"
#include "sim/chrome_trace.h"
#include "sim/engine.h"
#include "sim/trace_text.h"
#include "small_trace_run.h"
#include "test_paths.h"

namespace cs {
namespace {

TEST(ChromeTrace, SeedDdpTraceHasTheExpectedStructure) {
  const auto s = scenario::load_scenario(cs::test_paths::source_dir() +
                                         "/scenarios/gpt2-large-2xh100-ddp.yaml");
  const auto r = driver::simulate(s, {.with_baseline = false});
  std::ostringstream out;
  sim::write_chrome_trace(out, r.step.graph, r.timeline);
  const auto doc = nlohmann::json::parse(out.str());  // throws on invalid JSON
  ASSERT_TRUE(doc.contains("traceEvents"));
  size_t complete = 0, counters = 0;
  double peak_gib = 0;  // the highest per-category sum among rank 0's memory counters
  std::set<int> processes;
  std::map<int, std::set<int>> threads;
  for (const auto& e : doc["traceEvents"]) {
    const std::string ph = e.at("ph");
    if (ph == "M" && e.at("name") == "process_name") processes.insert(e.at("pid").get<int>());
    if (ph == "M" && e.at("name") == "thread_name")
      threads[e.at("pid").get<int>()].insert(e.at("tid").get<int>());
    if (ph == "X") {
      ++complete;
      EXPECT_GE(e.at("dur").get<double>(), 0.0);
      EXPECT_GE(e.at("ts").get<double>(), 0.0);
      EXPECT_TRUE(e.at("name").is_string());
    }
    if (ph == "C") {
      ++counters;
      double sum = 0;
      for (const auto& [category, gib] : e.at("args").items()) sum += gib.get<double>();
      if (e.at("pid") == 0) peak_gib = std::max(peak_gib, sum);
    }
  }
  size_t memory_tasks = 0;
  for (const auto& t : r.step.graph.tasks()) memory_tasks += t.kind == ir::TaskKind::memory;
  EXPECT_EQ(processes, (std::set<int>{0, 1}));              // two ranks
  EXPECT_EQ(threads[0], (std::set<int>{0, 1}));             // compute and comm streams
  EXPECT_EQ(complete, r.step.graph.size() - memory_tasks);  // every other task once
  EXPECT_EQ(counters, memory_tasks);                        // one sample per memory change
  // The stacked categories reach exactly the reported peak of the step's tensors (the reserve
  // beside them, strategies/memory_reserve.h, is added to the report after the run, not drawn).
  const auto& rank0 = r.report.ranks[0].memory;
  const int64_t tensors =
      rank0.peak - rank0.at_peak[static_cast<size_t>(ir::MemoryCategory::reserve)];
  EXPECT_NEAR(peak_gib, static_cast<double>(tensors) / (1 << 30), 1e-9);

  // Determinism, byte for byte: a second simulation writes the identical trace.
  const auto again = driver::simulate(s, {.with_baseline = false});
  std::ostringstream out2;
  sim::write_chrome_trace(out2, again.step.graph, again.timeline);
  EXPECT_EQ(out.str(), out2.str());
}

std::vector<nlohmann::json> events(const nlohmann::json& doc, const std::string& ph) {
  std::vector<nlohmann::json> out;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("ph") == ph) out.push_back(e);
  }
  return out;
}

// The complete events that carry a flow arrow's end (Perfetto's flow v2: bind_id on the slice).
std::vector<nlohmann::json> flow_ends(const nlohmann::json& doc) {
  std::vector<nlohmann::json> out;
  for (const auto& e : events(doc, "X")) {
    if (e.contains("bind_id")) out.push_back(e);
  }
  return out;
}

TEST(ChromeTrace, FlowsPairEachSendWithItsReceiveAndChainACollective) {
  const test::SmallRun run;
  const auto doc = run.trace(run.options());
  // No separate flow events: the arrows' ends are on the slices.
  EXPECT_TRUE(events(doc, "s").empty());
  EXPECT_TRUE(events(doc, "f").empty());
  const auto ends = flow_ends(doc);
  ASSERT_EQ(ends.size(), 4u);  // one transfer and one collective of two ranks: two ends each
  std::map<int64_t, std::vector<nlohmann::json>> by_id;
  for (const auto& e : ends) by_id[e.at("bind_id").get<int64_t>()].push_back(e);
  ASSERT_EQ(by_id.size(), 2u);
  for (const auto& [id, pair] : by_id) {
    ASSERT_EQ(pair.size(), 2u);
    // Rank 0's end starts the arrow (flow_out), rank 1's ends it (flow_in). The all-reduce starts
    // at 10 us on both ranks, so task order decides: rank 0's task was added first.
    const auto& from = pair[0].at("pid") == 0 ? pair[0] : pair[1];
    const auto& to = pair[0].at("pid") == 0 ? pair[1] : pair[0];
    EXPECT_EQ(to.at("pid"), 1);
    EXPECT_TRUE(from.value("flow_out", false));
    EXPECT_FALSE(from.value("flow_in", false));
    EXPECT_TRUE(to.value("flow_in", false));
    EXPECT_FALSE(to.value("flow_out", false));
    if (from.at("cat") == "send") {
      EXPECT_EQ(to.at("cat"), "recv");
    } else {
      EXPECT_EQ(from.at("cat"), "collective");
      EXPECT_EQ(to.at("cat"), "collective");
      EXPECT_EQ(id % 2, 1);  // collectives take the odd ids, transfers the even ones
    }
  }
  sim::TraceOptions no_flows = run.options();
  no_flows.flows = false;
  EXPECT_TRUE(flow_ends(run.trace(no_flows)).empty());
}

// A collective's arrow runs through its members in the order a viewer reads them (start time,
// then file order), so that its first slice begins the flow: here rank 2 joins first (task
// order 2, 0, 1, all starting together at 0), then rank 0, then rank 1.
TEST(ChromeTrace, ACollectivesArrowRunsInTheOrderItsMembersAppear) {
  ir::TaskGraph g(3);
  const auto stream = g.add_stream("comm");
  const auto call = g.new_collective(ir::CollectiveType::all_reduce, Bytes{5}, g.group({0, 1, 2}));
  for (ir::RankId r : {2u, 0u, 1u})
    g.add_collective(r, stream, call, g.label("ar", ir::Phase::backward));
  g.finalize();
  const test::FixedCostModel costs;
  const sim::Timeline tl = sim::Engine(g, costs).run();
  std::ostringstream out;
  sim::write_chrome_trace(out, g, tl);
  const auto ends = flow_ends(nlohmann::json::parse(out.str()));
  ASSERT_EQ(ends.size(), 3u);
  std::map<int, std::pair<bool, bool>> in_out;  // by rank
  for (const auto& e : ends)
    in_out[e.at("pid").get<int>()] = {e.value("flow_in", false), e.value("flow_out", false)};
  EXPECT_EQ(in_out[2], std::make_pair(false, true));  // begins
  EXPECT_EQ(in_out[0], std::make_pair(true, true));   // passes through
  EXPECT_EQ(in_out[1], std::make_pair(true, false));  // ends
}

TEST(ChromeTrace, CountersTrackMemoryByCategoryAndLinkUtilisation) {
  const test::SmallRun run;
  const auto doc = run.trace(run.options());
  std::vector<nlohmann::json> memory, links;
  for (const auto& c : events(doc, "C"))
    (c.at("name") == "memory GiB" ? memory : links).push_back(c);
  ASSERT_EQ(memory.size(), 2u);  // one allocation per rank, at 0
  for (const auto& m : memory) {
    EXPECT_DOUBLE_EQ(m.at("ts").get<double>(), 0.0);
    EXPECT_DOUBLE_EQ(m.at("args").at("activations").get<double>(), 1.0);  // 2^30 B = 1 GiB
    EXPECT_DOUBLE_EQ(m.at("args").at("parameters").get<double>(), 0.0);
  }
  // Link counters on the process after the ranks (pid 2). The all-reduce puts 100 B on link 0 at
  // 2 MB/s: 50 us busy over its 100 us = 50%. The transfer puts 30 B on link 1 at 1 MB/s: 30 us
  // busy over 30 us = 100%. Changes at 10 (both start), 40 (transfer ends), 110 (all-reduce ends).
  ASSERT_EQ(links.size(), 3u);
  const double ts[3] = {10, 40, 110}, nvlink[3] = {50, 50, 0}, ib[3] = {100, 0, 0};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(links[i].at("pid"), 2);
    EXPECT_DOUBLE_EQ(links[i].at("ts").get<double>(), ts[i]);
    EXPECT_NEAR(links[i].at("args").at("nvlink").get<double>(), nvlink[i], 1e-3);
    EXPECT_NEAR(links[i].at("args").at("infiniband").get<double>(), ib[i], 1e-3);
  }
}

TEST(ChromeTrace, RankFilterKeepsOnlyThoseRanks) {
  const test::SmallRun run;
  sim::TraceOptions o = run.options();
  o.ranks = sim::parse_rank_ranges("1");
  const auto doc = run.trace(o);
  // Rank 1's compute, all-reduce and receive; no flow (its other end is filtered out).
  const auto complete = events(doc, "X");
  ASSERT_EQ(complete.size(), 3u);
  for (const auto& e : complete) EXPECT_EQ(e.at("pid"), 1);
  EXPECT_TRUE(flow_ends(doc).empty());
  for (const auto& c : events(doc, "C")) EXPECT_NE(c.at("pid"), 0);
}

TEST(ChromeTrace, TimeWindowKeepsOverlappingEventsAndRestartsCounters) {
  const test::SmallRun run;
  sim::TraceOptions o = run.options();
  o.window = sim::parse_time_window("0.02:0.05");  // [20 us, 50 us]
  const auto doc = run.trace(o);
  // Overlapping [20, 50]: both all-reduces [10, 110], the send and the receive [10, 40]; not the
  // computes [0, 10].
  const auto complete = events(doc, "X");
  EXPECT_EQ(complete.size(), 4u);
  for (const auto& e : complete) EXPECT_NE(e.at("cat"), "compute");
  EXPECT_EQ(flow_ends(doc).size(), 4u);  // both ends of both flows are kept
  std::vector<nlohmann::json> memory, links;
  for (const auto& c : events(doc, "C"))
    (c.at("name") == "memory GiB" ? memory : links).push_back(c);
  // Memory: the state at the window's start (1 GiB on each rank), nothing after.
  ASSERT_EQ(memory.size(), 2u);
  for (const auto& m : memory) {
    EXPECT_DOUBLE_EQ(m.at("ts").get<double>(), 20.0);
    EXPECT_DOUBLE_EQ(m.at("args").at("activations").get<double>(), 1.0);
  }
  // Links: the level at 20 (50%, 100%) and the change at 40; 110 is past the window.
  ASSERT_EQ(links.size(), 2u);
  EXPECT_DOUBLE_EQ(links[0].at("ts").get<double>(), 20.0);
  EXPECT_NEAR(links[0].at("args").at("infiniband").get<double>(), 100.0, 1e-3);
  EXPECT_DOUBLE_EQ(links[1].at("ts").get<double>(), 40.0);
  EXPECT_NEAR(links[1].at("args").at("infiniband").get<double>(), 0.0, 1e-3);
}

TEST(ChromeTrace, GzipFileRoundTripsToTheSameText) {
  const test::SmallRun run;
  std::ostringstream plain;
  sim::write_chrome_trace(plain, run.g, run.tl, run.options());
  const auto path = (std::filesystem::temp_directory_path() /
                     ("cs_trace_test_" + std::to_string(::getpid()) + ".json.gz"))
                        .string();
  sim::write_chrome_trace_file(path, run.g, run.tl, run.options());
  gzFile f = gzopen(path.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::string text;
  char buf[4096];
  for (int n; (n = gzread(f, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  gzclose(f);
  // The file really is compressed: gzip's magic bytes 1f 8b.
  std::FILE* raw = std::fopen(path.c_str(), "rb");
  ASSERT_NE(raw, nullptr);
  const int b0 = std::fgetc(raw), b1 = std::fgetc(raw);
  std::fclose(raw);
  std::filesystem::remove(path);
  EXPECT_EQ(b0, 0x1f);
  EXPECT_EQ(b1, 0x8b);
  EXPECT_EQ(text, plain.str());
  EXPECT_NO_THROW((void)nlohmann::json::parse(text));
}

TEST(ChromeTrace, FilterArgumentsParseOrSayWhatIsExpected) {
  using R = std::vector<std::pair<ir::RankId, ir::RankId>>;
  EXPECT_EQ(sim::parse_rank_ranges("0-7,16"), (R{{0, 7}, {16, 16}}));
  EXPECT_THROW(sim::parse_rank_ranges("7-3"), UserError);
  EXPECT_THROW(sim::parse_rank_ranges("a"), UserError);
  EXPECT_THROW(sim::parse_rank_ranges("1,,2"), UserError);
  const auto w = sim::parse_time_window("1.5:250");
  EXPECT_EQ(w.first, SimTime{1'500'000'000});  // 1.5 ms in ps
  EXPECT_EQ(w.second, SimTime{250'000'000'000});
  EXPECT_THROW(sim::parse_time_window("5:2"), UserError);
  EXPECT_THROW(sim::parse_time_window("1:x"), UserError);
  EXPECT_THROW(sim::parse_time_window("12"), UserError);
  // Issue 34: a number out of range was "not a rank or a range" / "not a time in ms".
  EXPECT_EQ(test::error_of([] { sim::parse_rank_ranges("0-99999999999"); }),
            "--trace-ranks '0-99999999999': '0-99999999999' is out of range: ranks are 0 to "
            "131071 (a cluster has at most 131072 GPUs: twice the largest announced training "
            "cluster) (expected ranks and ranges such as 0-7,16)");
  EXPECT_EQ(test::error_of([] { sim::parse_time_window("0:1e300"); }),
            "--trace-window '0:1e300': '1e300' is out of range: from 0 to 1e12 ms (a time into "
            "the step; the simulator's clock ends at 106 days, 9.2e9 ms) (expected START:END in "
            "milliseconds, e.g. 0:250)");
  EXPECT_EQ(test::error_of([] { sim::parse_time_window("0:1e999"); }),
            "--trace-window '0:1e999': '1e999' is out of range: from 0 to 1e12 ms (a time into "
            "the step; the simulator's clock ends at 106 days, 9.2e9 ms) (expected START:END in "
            "milliseconds, e.g. 0:250)");
}

}  // namespace
}  // namespace cs

namespace cs {
namespace {

TEST(ChromeTrace, TimesAndSizesAreExactDecimals) {
  // One compute op of 43.04433 us (43,044,330 ps: FixedCostModel reads flops as us) moving
  // 30,408,704 B, after a 1.5 us one: its event says ts 1.5, dur 43.04433 and mbytes 30.408704,
  // digit for digit (a double's shortest form of 43,044,330e-6 is 43.044329999999995).
  ir::TaskGraph g(1);
  const auto s = g.add_stream("compute");
  const auto first = g.add_compute(0, s, test::op_us(1.5), g.label("first", ir::Phase::forward));
  ir::ComputeOp op = test::op_us(43.04433);
  op.bytes = Bytes{30408704};
  const auto second = g.add_compute(0, s, op, g.label("second", ir::Phase::forward));
  g.add_dependency(first, second);
  g.finalize();
  const test::FixedCostModel costs;
  const sim::Timeline tl = sim::Engine(g, costs).run();
  std::ostringstream out;
  sim::write_chrome_trace(out, g, tl);
  const std::string text = out.str();
  EXPECT_NE(text.find("\"name\":\"second\",\"cat\":\"compute\",\"pid\":0,\"tid\":0,\"ts\":1.5,"
                      "\"dur\":43.04433,"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"mbytes\":30.408704}"), std::string::npos);
}

}  // namespace
}  // namespace cs

namespace cs {
namespace {

// A trace longer than the writer's blocks (1 MiB) goes through the background writer block by
// block, and a name longer than a whole block still fits: the file is the text the stream
// variant writes, byte for byte. 6,000 ranks' compute tasks of about 190 B each make about 1.1 MB.
TEST(ChromeTrace, AFileSpanningManyBlocksIsTheSameText) {
  constexpr ir::RankId kRanks = 6000;
  ir::TaskGraph g(kRanks);
  const auto s = g.add_stream("compute");
  const std::string long_name(3 << 20, 'n');  // 3 MiB: past a block and its slack
  for (ir::RankId r = 0; r < kRanks; ++r)
    g.add_compute(r, s, test::op_us(1), g.label(r == 7 ? long_name : "op", ir::Phase::forward));
  g.finalize();
  const test::FixedCostModel costs;
  const sim::Timeline tl = sim::Engine(g, costs).run();
  std::ostringstream plain;
  sim::write_chrome_trace(plain, g, tl, sim::TraceOptions{});
  ASSERT_GT(plain.str().size(), size_t{4} << 20);
  const auto path = (std::filesystem::temp_directory_path() /
                     ("cs_trace_blocks_" + std::to_string(::getpid()) + ".json"))
                        .string();
  sim::write_chrome_trace_file(path, g, tl, sim::TraceOptions{});
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  EXPECT_EQ(text, plain.str());
  const auto doc = nlohmann::json::parse(text);
  size_t complete = 0;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    ++complete;
    if (e.at("pid") == 7) EXPECT_EQ(e.at("name"), long_name);
  }
  EXPECT_EQ(complete, kRanks);
}

// Writes `bytes` through write_blocks_to_file in records of `record` bytes, to a file of the temp
// folder named `name` (made unique by the process id); returns its path.
std::string write_in_records(const std::string& name, bool gzip, const std::string& bytes,
                             size_t record) {
  const auto path =
      (std::filesystem::temp_directory_path() / (std::to_string(::getpid()) + "_" + name)).string();
  sim::write_blocks_to_file(path, gzip, [&](const sim::BlockSink& sink) {
    sim::BlockText text(sink);
    for (size_t at = 0; at < bytes.size(); at += record) {
      text.raw(std::string_view(bytes).substr(at, record));
      text.end_record();
    }
    text.flush();
  });
  return path;
}

// The gzip writer on input it cannot shrink: 3 MiB of pseudo-random bytes in three blocks come out
// larger than they went in, so the compressor's 256 KiB output buffer fills and is written many
// times per block, and the stream is ended after the last. zlib reads the file back to the same
// bytes (gzread checks the trailer's CRC-32 and length, RFC 1952 section 2.3.1).
TEST(ChromeTrace, GzipOfIncompressibleBlocksReadsBackWhole) {
  std::string bytes(3 << 20, '\0');
  uint64_t x = 88172645463325252u;  // xorshift64 (Marsaglia 2003): no structure for deflate to find
  for (char& c : bytes) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x >> 56);
  }
  const std::string path = write_in_records("cs_trace_random.json.gz", true, bytes, 4096);
  EXPECT_GT(std::filesystem::file_size(path), bytes.size());
  gzFile f = gzopen(path.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::string back;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) back.append(buf, static_cast<size_t>(n));
  EXPECT_EQ(n, 0) << "gzread: the stream or its trailer is damaged";
  gzclose(f);
  std::filesystem::remove(path);
  EXPECT_TRUE(back == bytes) << "read back " << back.size() << " of " << bytes.size() << " bytes";
}

// An uncompressed trace is written around the page cache in 4 MiB stages where the file system
// allows it (O_DIRECT), its last partial stage through the cache. 9 MiB + 12,345 bytes in records
// of 4,096 + 7 bytes cross two stage boundaries in the middle of a record and end 1 MiB + 12,345
// bytes into the third: the file holds every byte, in order.
TEST(ChromeTrace, AnUncompressedFileHoldsEveryByteAcrossItsStages) {
  std::string bytes((9 << 20) + 12345, '\0');
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<char>('a' + (i * 7 + i / 4103) % 26);
  const std::string path = write_in_records("cs_trace_plain.json", false, bytes, 4103);
  std::ifstream in(path, std::ios::binary);
  const std::string back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  EXPECT_EQ(back.size(), bytes.size());
  EXPECT_TRUE(back == bytes) << "the file differs from what was written";
}

// A write that fails stops the formatter: the writer consumes nothing after the failed block, and
// the producer's next take() throws instead of formatting the rest of the trace. The producer can
// have handed over at most the two blocks consumed plus the three the queue holds
// (BackgroundWriter::kDepth) before it hears of the failure, whatever the threads' timing.
TEST(ChromeTrace, AFailedWriteStopsTheFormatter) {
  int consumed = 0;  // the writer thread's; read after finish() joins it
  int taken = 0;
  int error_seen = 0;
  sim::BackgroundWriter writer([&](const char*, size_t) { return ++consumed == 2 ? ENOSPC : 0; });
  try {
    for (; taken < 100; ++taken) {
      sim::TextBlock b{std::make_unique<char[]>(1), 1, 1};
      writer.take(b);
    }
  } catch (const sim::WriteFailed& f) {
    error_seen = f.error_number;
  }
  writer.finish();
  EXPECT_EQ(error_seen, ENOSPC);
  EXPECT_EQ(consumed, 2);
  EXPECT_LE(taken, 2 + 3);
}

}  // namespace
}  // namespace cs
