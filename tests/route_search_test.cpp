// Topology::route searches from both ends (issue 18: a whole-graph search per route made large
// rings quadratic). It must give exactly the path of a plain breadth-first search from the source,
// which is what every plan and report was computed with: checked here against that search on the
// presets and on hand-made topologies with ties, parallel links and GPUs that must not be transit.
#include <gtest/gtest.h>

#include <deque>
#include <random>

#include "common/error.h"
#include "topology/cluster_spec.h"
#include "topology/topology.h"

namespace {

using namespace cs;
using namespace cs::topo;

// The reference: breadth-first over directed edges from the source, GPUs other than the source
// not expanded, each vertex keeping the first edge that reached it.
std::vector<uint32_t> links_of(const Route& r) { return {r.links.begin(), r.links.end()}; }

std::vector<uint32_t> bfs_route(const Topology& t, int src_rank, int dst_rank) {
  const VertexId src = t.gpu(src_rank), dst = t.gpu(dst_rank);
  const size_t n = t.device_count();
  std::vector<uint32_t> parent_link(n);
  std::vector<bool> seen(n, false);
  std::deque<VertexId> queue{src};
  seen[src] = true;
  while (!queue.empty() && !seen[dst]) {
    const VertexId v = queue.front();
    queue.pop_front();
    if (v != src && t.device(v).kind == DeviceKind::gpu) continue;
    for (const OutLink& e : t.out_links(v)) {
      if (seen[e.target]) continue;
      seen[e.target] = true;
      parent_link[e.target] = e.link;
      queue.push_back(e.target);
    }
  }
  if (!seen[dst]) throw UserError("unreachable");
  std::vector<uint32_t> r;
  for (VertexId v = dst; v != src; v = t.link_source(parent_link[v])) r.push_back(parent_link[v]);
  std::reverse(r.begin(), r.end());
  return r;
}

void expect_all_pairs_match(const Topology& t, int stride = 1) {
  for (int a = 0; a < t.gpu_count(); a += stride) {
    for (int b = 0; b < t.gpu_count(); ++b) {
      ASSERT_EQ(links_of(t.route(a, b)), bfs_route(t, a, b)) << "route " << a << " -> " << b;
    }
  }
}

TEST(RouteSearch, PresetsMatchBreadthFirstSearch) {
  for (const ClusterSpec& preset : cluster_presets()) {
    for (int nodes : {1, 2, 3}) {
      if (nodes > 1 && preset.node.nics == 0) continue;
      SCOPED_TRACE(preset.name + " x " + std::to_string(nodes));
      expect_all_pairs_match(build_preset(preset.name, nodes));
    }
  }
}

TEST(RouteSearch, FabricsAcrossLeavesMatchBreadthFirstSearch) {
  for (FabricKind kind :
       {FabricKind::rail_optimized, FabricKind::fat_tree, FabricKind::single_switch}) {
    for (const char* name : {"dgx_h100", "pcie_8x_h100", "nvlink_pairs_8x_h100"}) {
      ClusterSpec c = preset_with_nodes(name, 7);
      c.fabric.kind = kind;
      c.fabric.nodes_per_leaf = 2;  // four leaves per rail, a spine between them
      SCOPED_TRACE(std::string(name) + " fabric " + std::string(to_string(kind)));
      expect_all_pairs_match(build_cluster(c), 3);
    }
  }
}

TEST(RouteSearch, TiesParallelLinksAndGpusThatDoNotForward) {
  // Two switches joined twice, GPUs on both, a GPU with two paths of equal length, and a chain
  // that would be shorter through a GPU (not allowed).
  Topology t;
  const BytesPerSecond bw{1e9};
  const SimTime lat{1};
  std::vector<VertexId> g;
  for (int i = 0; i < 6; ++i)
    g.push_back(t.add_device(DeviceKind::gpu, "g" + std::to_string(i), i / 3));
  const VertexId s0 = t.add_device(DeviceKind::network_switch, "s0", -1);
  const VertexId s1 = t.add_device(DeviceKind::network_switch, "s1", -1);
  const VertexId s2 = t.add_device(DeviceKind::network_switch, "s2", -1);
  const VertexId p = t.add_device(DeviceKind::pcie_switch, "p", 0);
  t.add_link(g[0], s1, LinkKind::ethernet, bw, lat);
  t.add_link(g[0], s0, LinkKind::ethernet, bw, lat);
  t.add_link(s0, s1, LinkKind::ethernet, bw, lat);
  t.add_link(s1, s0, LinkKind::infiniband, bw, lat);  // parallel, added later
  t.add_link(s0, s2, LinkKind::ethernet, bw, lat);
  t.add_link(s1, s2, LinkKind::ethernet, bw, lat);
  t.add_link(g[1], s2, LinkKind::ethernet, bw, lat);
  t.add_link(g[2], g[1], LinkKind::nvlink, bw,
             lat);  // g2 reaches the rest only through g1: unreachable
  t.add_link(g[3], p, LinkKind::pcie, bw, lat);
  t.add_link(p, g[4], LinkKind::pcie, bw, lat);
  t.add_link(g[4], s0, LinkKind::ethernet, bw, lat);
  t.add_link(g[5], s2, LinkKind::ethernet, bw, lat);
  t.add_link(g[5], s1, LinkKind::ethernet, bw, lat);
  t.add_link(p, s1, LinkKind::pcie, bw, lat);
  for (int a = 0; a < 6; ++a) {
    for (int b = 0; b < 6; ++b) {
      bool reachable = true;
      std::vector<uint32_t> expected;
      try {
        expected = bfs_route(t, a, b);
      } catch (const UserError&) {
        reachable = false;
      }
      if (reachable) {
        EXPECT_EQ(links_of(t.route(a, b)), expected) << a << " -> " << b;
      } else {
        EXPECT_THROW(t.route(a, b), UserError) << a << " -> " << b;
      }
    }
  }
}

TEST(RouteSearch, RandomGraphsMatchBreadthFirstSearch) {
  // Many ties and dead ends: a third of the vertices are GPUs, links random (parallel ones too).
  std::mt19937 rng(18);
  for (int trial = 0; trial < 60; ++trial) {
    Topology t;
    const int n = 6 + trial % 25;
    std::vector<VertexId> v;
    for (int i = 0; i < n; ++i) {
      const bool gpu = i % 3 == 0;
      v.push_back(t.add_device(gpu ? DeviceKind::gpu : DeviceKind::network_switch,
                               "v" + std::to_string(i), gpu ? i : -1));
    }
    const int links = n + static_cast<int>(rng() % static_cast<unsigned>(2 * n));
    for (int k = 0; k < links; ++k) {
      const auto a = rng() % static_cast<unsigned>(n), b = rng() % static_cast<unsigned>(n);
      if (a != b) t.add_link(v[a], v[b], LinkKind::ethernet, BytesPerSecond{1e9}, SimTime{1});
    }
    for (int a = 0; a < t.gpu_count(); ++a) {
      for (int b = 0; b < t.gpu_count(); ++b) {
        bool reachable = true;
        std::vector<uint32_t> expected;
        try {
          expected = bfs_route(t, a, b);
        } catch (const UserError&) {
          reachable = false;
        }
        if (reachable) {
          ASSERT_EQ(links_of(t.route(a, b)), expected)
              << "trial " << trial << ": " << a << " -> " << b;
        } else {
          ASSERT_THROW(t.route(a, b), UserError) << "trial " << trial << ": " << a << " -> " << b;
        }
      }
    }
  }
}

// The device-name index is built on the first find() (topology.h, RouteCache::by_name): it finds
// devices added after an earlier lookup, and a name given twice is refused there, naming it.
TEST(TopologyNames, FoundAfterLaterAddsAndARepeatedNameIsRefused) {
  Topology t;
  const VertexId a = t.add_device(DeviceKind::gpu, "n0.gpu0", 0);
  EXPECT_EQ(t.find("n0.gpu0"), a);
  const VertexId b = t.add_device(DeviceKind::nvswitch, "n0.nvswitch", 0);
  EXPECT_EQ(t.find("n0.nvswitch"), b);
  EXPECT_THROW(t.find("n0.gpu9"), UserError);
  t.add_device(DeviceKind::gpu, "n0.gpu0", 0);
  try {
    t.find("n0.nvswitch");
    ADD_FAILURE() << "a repeated device name was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("device 'n0.gpu0' is defined twice"), std::string::npos)
        << e.what();
  }
}

}  // namespace
