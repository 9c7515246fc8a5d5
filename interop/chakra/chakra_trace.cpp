#include "interop/chakra/chakra_trace.h"

#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/util/delimited_message_util.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>

#include "common/error.h"
#include "common/output_file.h"
#include "interop/chakra/et_def.pb.h"

namespace cs::interop {

namespace {

// Chakra's schema version these files follow (GlobalMetadata.version, as Chakra's converters
// write it).
constexpr const char* kSchemaVersion = "0.0.4";

uint64_t whole_micros(SimTime t) {
  if (t.ps <= 0) return 0;
  return static_cast<uint64_t>(std::llround(static_cast<double>(t.ps) * 1e-6));
}

void add_int(cs::chakra::Node& n, const std::string& name, int64_t v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_int64_val(v);
}
void add_int32(cs::chakra::Node& n, const std::string& name, int64_t v) {
  if (v < 0 || v > std::numeric_limits<int32_t>::max())
    throw UserError("chakra: " + name + " " + std::to_string(v) +
                    " does not fit the schema's int32");
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_int32_val(static_cast<int32_t>(v));
}
void add_uint(cs::chakra::Node& n, const std::string& name, uint64_t v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_uint64_val(v);
}
void add_bool(cs::chakra::Node& n, const std::string& name, bool v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_bool_val(v);
}
void add_text(cs::chakra::Node& n, const std::string& name, std::string_view v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_string_val(std::string(v));
}

std::string pg_name(ir::GroupId g) {
  return std::to_string(g + 1);
}  // "0" would read as "no group"

}  // namespace

int chakra_comm_type(ir::CollectiveType t) {
  switch (t) {
    case ir::CollectiveType::all_reduce:
      return cs::chakra::ALL_REDUCE;
    case ir::CollectiveType::all_gather:
      return cs::chakra::ALL_GATHER;
    case ir::CollectiveType::reduce_scatter:
      return cs::chakra::REDUCE_SCATTER;
    case ir::CollectiveType::broadcast:
      return cs::chakra::BROADCAST;
    case ir::CollectiveType::all_to_all:
      return cs::chakra::ALL_TO_ALL;
  }
  return cs::chakra::ALL_REDUCE;
}

namespace {

// A task's type, duration and attributes (the node's id, name and dependencies are set already).
void describe_task(cs::chakra::Node& n, const ChakraInput& in, const ir::TaskGraph& g,
                   const ir::Task& task, ChakraSummary& sum) {
  switch (task.kind) {
    case ir::TaskKind::compute: {
      const ir::ComputeOp& op = g.compute(task);
      n.set_type(cs::chakra::COMP_NODE);
      n.set_duration_micros(whole_micros(in.compute_time(op)));
      add_int(n, "num_ops", static_cast<int64_t>(std::llround(op.flops.value)));
      add_uint(n, "tensor_size", static_cast<uint64_t>(op.bytes.count));
      add_text(n, "op_class", ir::to_string(op.op));
      add_text(n, "dtype", ir::to_string(op.dtype));
      ++sum.compute;
      break;
    }
    case ir::TaskKind::collective: {
      const ir::CollectiveCall& c = g.collective(task);
      n.set_type(cs::chakra::COMM_COLL_NODE);
      add_int(n, "comm_type", chakra_comm_type(c.type));
      add_int(n, "comm_size", c.bytes.count);
      add_text(n, "pg_name", pg_name(c.group));
      ++sum.collectives;
      break;
    }
    case ir::TaskKind::send:
    case ir::TaskKind::recv: {
      const ir::Transfer& x = g.transfer(task);
      const bool send = task.kind == ir::TaskKind::send;
      n.set_type(send ? cs::chakra::COMM_SEND_NODE : cs::chakra::COMM_RECV_NODE);
      add_int32(n, "comm_src", x.src);
      add_int32(n, "comm_dst", x.dst);
      add_int32(n, "comm_tag", task.payload);
      add_int(n, "comm_size", x.bytes.count);
      ++(send ? sum.sends : sum.recvs);
      break;
    }
    case ir::TaskKind::memory: {
      const ir::MemoryOp& m = g.memory(task);
      n.set_type(cs::chakra::COMP_NODE);
      add_int(n, "memory_delta", m.delta);
      add_text(n, "memory_category", ir::to_string(m.category));
      ++sum.memory;
      break;
    }
    case ir::TaskKind::delay:
      n.set_type(cs::chakra::COMP_NODE);
      n.set_duration_micros(whole_micros(g.delay(task)));
      ++sum.delays;
      break;
  }
}

// Per task: its explicit predecessors on the same rank; a dependency across ranks is refused.
std::vector<std::vector<ir::TaskId>> same_rank_predecessors(const ir::TaskGraph& g,
                                                            ChakraSummary& sum) {
  std::vector<std::vector<ir::TaskId>> preds(g.size());
  for (const auto& [before, after] : g.dependencies()) {
    if (g.task(before).rank != g.task(after).rank) {
      ++sum.cross_rank_dependencies;
      continue;
    }
    preds[after].push_back(before);
  }
  if (sum.cross_rank_dependencies > 0)
    throw UserError("--chakra: the graph has " + std::to_string(sum.cross_rank_dependencies) +
                    " dependencies between ranks that are not transfers; a Chakra trace orders "
                    "ranks only through communication");
  return preds;
}

// The groups the collectives name, for ASTRA-sim's --comm-group-configuration.
void write_comm_groups(const ir::TaskGraph& g, const std::string& dir, ChakraSummary& sum) {
  std::vector<bool> used;
  for (const ir::Task& task : g.tasks()) {
    if (task.kind != ir::TaskKind::collective) continue;
    const ir::GroupId grp = g.collective(task).group;
    if (grp >= used.size()) used.resize(grp + 1, false);
    used[grp] = true;
  }
  const std::string groups_path = (std::filesystem::path(dir) / "comm_group.json").string();
  OutputFile groups_file(groups_path);
  std::ostream& gf = groups_file.stream();
  gf << "{";
  bool first = true;
  for (ir::GroupId grp = 0; grp < used.size(); ++grp) {
    if (!used[grp]) continue;
    gf << (first ? "\n" : ",\n") << "  \"" << pg_name(grp) << "\": [";
    const auto& ranks = g.group_ranks(grp);
    for (size_t i = 0; i < ranks.size(); ++i) gf << (i ? ", " : "") << ranks[i];
    gf << "]";
    first = false;
    ++sum.groups;
  }
  gf << (first ? "}\n" : "\n}\n");
  groups_file.commit();
}

}  // namespace

ChakraSummary write_chakra_traces(const ChakraInput& in, const std::string& dir,
                                  const std::string& prefix) {
  const ir::TaskGraph& g = *in.graph;
  if (!g.finalized()) throw std::logic_error("write_chakra_traces: graph not finalized");
  if (g.representative())
    throw UserError("--chakra needs every rank's tasks, but this graph simulates " +
                    std::to_string(g.ranks()) + " representative ranks of " +
                    std::to_string(g.cluster_size()) + ": add --ranks all");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw UserError("--chakra " + dir + ": cannot create the folder (" + ec.message() + ")");

  ChakraSummary sum;
  // Per task: its node id within its rank's file (tasks are numbered in graph order per rank).
  std::vector<uint64_t> local(g.size());
  std::vector<uint64_t> next_id(g.ranks(), 0);
  for (ir::TaskId t = 0; t < g.size(); ++t) local[t] = next_id[g.task(t).rank]++;
  const std::vector<std::vector<ir::TaskId>> preds = same_rank_predecessors(g, sum);

  // One file per rank, written in one pass over the tasks with every file open would need
  // thousands of descriptors at scale: write rank by rank over the task list instead.
  std::vector<std::vector<ir::TaskId>> by_rank(g.ranks());
  for (ir::TaskId t = 0; t < g.size(); ++t) by_rank[g.task(t).rank].push_back(t);

  for (ir::RankId r = 0; r < g.ranks(); ++r) {
    const std::string path =
        (std::filesystem::path(dir) / (prefix + "." + std::to_string(r) + ".et")).string();
    OutputFile file(path);
    // The protobuf stream hands its buffer to the file's stream when it goes out of scope, before
    // the file is committed.
    auto out_holder = std::make_unique<google::protobuf::io::OstreamOutputStream>(&file.stream());
    auto& out = *out_holder;
    cs::chakra::GlobalMetadata meta;
    meta.set_version(kSchemaVersion);
    auto* gen = meta.add_attr();
    gen->set_name("generator");
    gen->set_string_val(in.generator.empty() ? "clustersim" : in.generator);
    google::protobuf::util::SerializeDelimitedToZeroCopyStream(meta, &out);

    std::vector<ir::TaskId> last_on_stream(g.stream_names().size(),
                                           std::numeric_limits<ir::TaskId>::max());
    cs::chakra::Node n;
    for (const ir::TaskId t : by_rank[r]) {
      const ir::Task& task = g.task(t);
      n.Clear();
      n.set_id(local[t]);
      n.set_name(g.task_name(t));
      // Data dependencies: the stream's previous task, then the graph's own (without repeats).
      ir::TaskId& prev = last_on_stream[task.stream];
      if (prev != std::numeric_limits<ir::TaskId>::max()) n.add_data_deps(local[prev]);
      for (const ir::TaskId p : preds[t]) {
        if (p == prev) continue;
        n.add_data_deps(local[p]);
      }
      prev = t;
      sum.dependencies += n.data_deps_size();
      if (in.start_time) n.set_start_time_micros(whole_micros(in.start_time(t)));
      add_bool(n, "is_cpu_op", false);
      describe_task(n, in, g, task, sum);
      google::protobuf::util::SerializeDelimitedToZeroCopyStream(n, &out);
      ++sum.nodes;
    }
    sum.bytes += out.ByteCount();
    out_holder.reset();
    file.commit();
    ++sum.files;
  }

  write_comm_groups(g, dir, sum);
  return sum;
}

int64_t ChakraNode::attr(const std::string& key, int64_t missing) const {
  for (const auto& [k, v] : int_attrs)
    if (k == key) return v;
  return missing;
}

std::string ChakraNode::text_attr(const std::string& key) const {
  for (const auto& [k, v] : string_attrs)
    if (k == key) return v;
  return "";
}

ChakraTrace read_chakra_trace(const std::string& path) {
  // A regular file of at most 4 GiB: /dev/zero reads as empty Node messages without end, and the
  // traces clustersim writes are a few MB per rank.
  constexpr std::uintmax_t kMaxTraceBytes = std::uintmax_t{1} << 32;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw UserError(path + ": not a regular file; a Chakra trace is read from a file");
  if (std::filesystem::file_size(path, ec) > kMaxTraceBytes)
    throw UserError(path + ": larger than 4 GiB; not read (a Chakra trace per rank is MBs)");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UserError("cannot read Chakra trace '" + path + "'");
  google::protobuf::io::IstreamInputStream in(&f);
  ChakraTrace out;
  cs::chakra::GlobalMetadata meta;
  bool clean_eof = false;
  if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&meta, &in, &clean_eof))
    throw UserError(path + ": not a Chakra trace (no GlobalMetadata message at the start)");
  out.version = meta.version();
  cs::chakra::Node n;
  for (;;) {
    n.Clear();
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&n, &in, &clean_eof)) {
      if (clean_eof) break;
      throw UserError(path + ": node " + std::to_string(out.nodes.size()) +
                      " is not a Chakra Node message (truncated or another format)");
    }
    ChakraNode c;
    c.id = n.id();
    c.name = n.name();
    c.type = n.type();
    c.data_deps.assign(n.data_deps().begin(), n.data_deps().end());
    c.duration_micros = n.duration_micros();
    c.start_time_micros = n.start_time_micros();
    for (const auto& a : n.attr()) {
      switch (a.value_case()) {
        case cs::chakra::AttributeProto::kInt32Val:
          c.int_attrs.emplace_back(a.name(), a.int32_val());
          break;
        case cs::chakra::AttributeProto::kInt64Val:
          c.int_attrs.emplace_back(a.name(), a.int64_val());
          break;
        case cs::chakra::AttributeProto::kUint64Val:
          c.int_attrs.emplace_back(a.name(), static_cast<int64_t>(a.uint64_val()));
          break;
        case cs::chakra::AttributeProto::kBoolVal:
          c.int_attrs.emplace_back(a.name(), a.bool_val() ? 1 : 0);
          break;
        case cs::chakra::AttributeProto::kStringVal:
          c.string_attrs.emplace_back(a.name(), a.string_val());
          break;
        default:
          break;  // kinds clustersim does not write
      }
    }
    out.nodes.push_back(std::move(c));
  }
  return out;
}

}  // namespace cs::interop
