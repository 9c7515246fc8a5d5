// The layers: a library's sources include only the folders of the libraries it links, directly or
// through their PUBLIC dependencies, as the CMakeLists.txt files declare them. An upward include
// (sim/ reading strategies/, a report reading the driver) fails here even where the build would
// still compile it, because every folder shares the repository root as its include path.
// Within cost_models/, which sim/ links, the simulator sees two headers only (SimSeesOnlyTheCost-
// Interface below): NCCL's algorithms and protocols stay in the cost models.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test_paths.h"

namespace cs {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = cs::test_paths::source_dir();

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The project's libraries as their CMakeLists.txt declare them: the folder of each cs_* target and
// the cs_* targets it links (PUBLIC or PRIVATE: a source may include what it links).
struct Libraries {
  std::map<std::string, std::string> folder;            // cs_sim -> sim
  std::map<std::string, std::set<std::string>> links;   // cs_sim -> {cs_taskgraph, cs_cost_models}
  std::map<std::string, std::set<std::string>> of_dir;  // interop/chakra -> {cs_chakra}
};

Libraries read_libraries() {
  Libraries l;
  const std::regex add(R"(add_library\(\s*(cs_\w+))");
  const std::regex link(R"(target_link_libraries\(\s*(cs_\w+)([^)]*)\))");
  const std::regex dep(R"(\bcs_\w+)");
  // Tests, benchmarks and fuzz targets may read any layer; build folders and dot folders are not
  // sources.
  auto skipped = [](const std::string& top) {
    return top == "tests" || top == "bench" || top == "fuzz" || top.rfind("build", 0) == 0 ||
           top[0] == '.';
  };
  for (auto it = fs::recursive_directory_iterator(kRoot); it != fs::recursive_directory_iterator();
       ++it) {
    const fs::path rel = fs::relative(it->path(), kRoot);
    const std::string top = rel.begin()->string();
    if (it->is_directory() && skipped(top)) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->path().filename() != "CMakeLists.txt" || rel.parent_path().empty()) continue;
    const fs::path dir = rel.parent_path();
    const std::string text = slurp(it->path());
    for (std::sregex_iterator it(text.begin(), text.end(), add), end; it != end; ++it) {
      l.folder[(*it)[1]] = top;
      l.of_dir[dir.string()].insert((*it)[1]);
    }
    for (std::sregex_iterator it(text.begin(), text.end(), link), end; it != end; ++it) {
      const std::string args = (*it)[2];
      for (std::sregex_iterator d(args.begin(), args.end(), dep); d != end; ++d)
        l.links[(*it)[1]].insert(d->str());
    }
  }
  return l;
}

// The folders a library's sources may include: its own and those of every library it reaches.
std::set<std::string> allowed_folders(const Libraries& l, const std::set<std::string>& libs) {
  std::set<std::string> seen, folders;
  std::vector<std::string> todo(libs.begin(), libs.end());
  while (!todo.empty()) {
    const std::string lib = todo.back();
    todo.pop_back();
    if (!seen.insert(lib).second) continue;
    if (l.folder.count(lib)) folders.insert(l.folder.at(lib));
    if (l.links.count(lib))
      for (const auto& d : l.links.at(lib)) todo.push_back(d);
  }
  return folders;
}

TEST(Layers, EveryIncludeFollowsTheLinkedLibraries) {
  const Libraries l = read_libraries();
  // The declaration itself is read: the simulator's core libraries are there with their links.
  ASSERT_EQ(l.folder.at("cs_sim"), "sim");
  ASSERT_TRUE(l.links.at("cs_sim").count("cs_cost_models"));
  ASSERT_FALSE(l.links.at("cs_sim").count("cs_strategies"));
  std::set<std::string> project_folders;
  for (const auto& [lib, folder] : l.folder) project_folders.insert(folder);

  const std::regex include(R"(^\s*#\s*include\s*"([a-z_]+)/)");
  std::vector<std::string> violations;
  int files = 0;
  for (const auto& [dir, libs] : l.of_dir) {
    const std::set<std::string> allowed = allowed_folders(l, libs);
    for (const auto& e : fs::directory_iterator(kRoot / dir)) {
      const std::string ext = e.path().extension().string();
      if (ext != ".cpp" && ext != ".h" && ext != ".cu" && ext != ".cuh") continue;
      ++files;
      std::ifstream f(e.path());
      std::string line;
      for (int n = 1; std::getline(f, line); ++n) {
        std::smatch m;
        if (!std::regex_search(line, m, include)) continue;
        const std::string target = m[1];
        if (project_folders.count(target) && !allowed.count(target))
          violations.push_back(fs::relative(e.path(), kRoot).string() + ":" + std::to_string(n) +
                               " includes " + target + "/, which " + dir +
                               "'s libraries do not link");
      }
    }
  }
  EXPECT_GT(files, 100);  // the whole tree was read, not an empty folder
  for (const auto& v : violations) ADD_FAILURE() << v;
}

TEST(Layers, AnUpwardIncludeIsCaught) {
  // sim/ links taskgraph and cost_models; strategies/ (which emits graphs) is above it.
  const Libraries l = read_libraries();
  const auto sim = allowed_folders(l, l.of_dir.at("sim"));
  EXPECT_TRUE(sim.count("taskgraph"));
  EXPECT_TRUE(sim.count("common"));  // through taskgraph's PUBLIC cs_common
  EXPECT_FALSE(sim.count("strategies"));
  EXPECT_FALSE(sim.count("driver"));
  const auto reports = allowed_folders(l, l.of_dir.at("reports"));
  EXPECT_FALSE(reports.count("strategies"));  // reports read sim/, never strategies/
}

// Of cost_models/, sim/ may see only the interface it simulates against: the CostModel that
// prices tasks (cost_model.h) and the link loads behind a collective's cost (link_plan.h). The
// rest (NCCL's algorithm and protocol tables, the collective and compute models, device specs,
// profiles) is how costs are made, which the engine must not depend on: a simulator that could
// read NCCL's choice of algorithm could branch on it. The rule holds over every header a sim/
// source reaches through project includes, so link_plan.h itself cannot bring NCCL in.
const std::set<std::string> kSimSeesOfCostModels = {"cost_models/cost_model.h",
                                                    "cost_models/link_plan.h"};

// The project headers a file includes ("folder/name.h"), in order.
using IncludesOf = std::function<std::vector<std::string>(const std::string&)>;

std::vector<std::string> includes_on_disk(const std::string& file) {
  static const std::regex include(R"re(^\s*#\s*include\s*"([a-z_]+/[A-Za-z0-9_./]+)")re");
  std::vector<std::string> out;
  std::ifstream f(kRoot / file);
  std::string line;
  while (std::getline(f, line)) {
    std::smatch m;
    if (std::regex_search(line, m, include) && fs::exists(kRoot / m[1].str())) out.push_back(m[1]);
  }
  return out;
}

// Every header under `folder` that `sources` reach through includes, other than `allowed`, with
// the chain that reaches it ("sim/engine.h -> cost_models/cost_model.h -> cost_models/x.h").
std::vector<std::string> hidden_headers_reached(const std::vector<std::string>& sources,
                                                const IncludesOf& includes_of,
                                                const std::string& folder,
                                                const std::set<std::string>& allowed) {
  std::vector<std::string> found;
  std::set<std::string> reported;
  for (const std::string& source : sources) {
    std::map<std::string, std::string> chain{{source, source}};  // header -> how it was reached
    std::vector<std::string> todo{source};
    while (!todo.empty()) {
      const std::string file = todo.back();
      todo.pop_back();
      for (const std::string& h : includes_of(file)) {
        if (chain.count(h)) continue;
        chain[h] = chain[file] + " -> " + h;
        if (h.rfind(folder + "/", 0) == 0 && !allowed.count(h)) {
          if (reported.insert(chain[h]).second) found.push_back(chain[h]);
          continue;
        }
        todo.push_back(h);
      }
    }
  }
  return found;
}

TEST(Layers, SimSeesOnlyTheCostInterface) {
  std::vector<std::string> sources;
  for (const auto& e : fs::directory_iterator(kRoot / "sim")) {
    const std::string ext = e.path().extension().string();
    if (ext == ".cpp" || ext == ".h") sources.push_back(fs::relative(e.path(), kRoot).string());
  }
  std::sort(sources.begin(), sources.end());
  ASSERT_GT(sources.size(), 8u);  // sim/ was read
  // The interface is what sim/ does reach: engine.h includes cost_model.h, which includes
  // link_plan.h.
  const auto engine = includes_on_disk("sim/engine.h");
  EXPECT_NE(std::find(engine.begin(), engine.end(), "cost_models/cost_model.h"), engine.end());
  const auto interface = includes_on_disk("cost_models/cost_model.h");
  EXPECT_NE(std::find(interface.begin(), interface.end(), "cost_models/link_plan.h"),
            interface.end());
  for (const auto& v :
       hidden_headers_reached(sources, includes_on_disk, "cost_models", kSimSeesOfCostModels))
    ADD_FAILURE() << v << ": sim/ sees only "
                  << "cost_models/cost_model.h and cost_models/link_plan.h of the cost models";
}

TEST(Layers, NcclTablesReachedThroughAnAllowedHeaderAreCaught) {
  // A made-up tree: sim/a.cpp includes the interface, and the interface (wrongly) includes NCCL's
  // tables; sim/b.cpp includes the collective model directly. Both are caught, with their chains;
  // the allowed headers and the other folders' headers are not reported.
  const std::map<std::string, std::vector<std::string>> tree = {
      {"sim/a.cpp", {"sim/a.h", "cost_models/cost_model.h", "taskgraph/task_graph.h"}},
      {"sim/a.h", {"cost_models/link_plan.h"}},
      {"cost_models/cost_model.h", {"cost_models/link_plan.h", "cost_models/nccl_tables.h"}},
      {"cost_models/link_plan.h", {"common/units.h"}},
      {"sim/b.cpp", {"cost_models/collective_model.h"}},
  };
  const IncludesOf fake = [&](const std::string& f) {
    return tree.count(f) ? tree.at(f) : std::vector<std::string>{};
  };
  const auto found =
      hidden_headers_reached({"sim/a.cpp", "sim/b.cpp"}, fake, "cost_models", kSimSeesOfCostModels);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0], "sim/a.cpp -> cost_models/cost_model.h -> cost_models/nccl_tables.h");
  EXPECT_EQ(found[1], "sim/b.cpp -> cost_models/collective_model.h");
}

}  // namespace
}  // namespace cs
