// The layers: a library's sources include only the folders of the libraries it links, directly or
// through their PUBLIC dependencies, as the CMakeLists.txt files declare them. An upward include
// (sim/ reading strategies/, a report reading the driver) fails here even where the build would
// still compile it, because every folder shares the repository root as its include path.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace cs {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = CLUSTERSIM_SOURCE_DIR;

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The project's libraries as their CMakeLists.txt declare them: the folder of each cs_* target and
// the cs_* targets it links (PUBLIC or PRIVATE: a source may include what it links).
struct Libraries {
  std::map<std::string, std::string> folder;              // cs_sim -> sim
  std::map<std::string, std::set<std::string>> links;     // cs_sim -> {cs_taskgraph, cs_cost_models}
  std::map<std::string, std::set<std::string>> of_dir;    // interop/chakra -> {cs_chakra}
};

Libraries read_libraries() {
  Libraries l;
  const std::regex add(R"(add_library\(\s*(cs_\w+))");
  const std::regex link(R"(target_link_libraries\(\s*(cs_\w+)([^)]*)\))");
  const std::regex dep(R"(\bcs_\w+)");
  // Tests, benchmarks and fuzz targets may read any layer; build folders and dot folders are not sources.
  auto skipped = [](const std::string& top) {
    return top == "tests" || top == "bench" || top == "fuzz" || top.rfind("build", 0) == 0 || top[0] == '.';
  };
  for (auto it = fs::recursive_directory_iterator(kRoot); it != fs::recursive_directory_iterator(); ++it) {
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
      for (std::sregex_iterator d(args.begin(), args.end(), dep); d != end; ++d) l.links[(*it)[1]].insert(d->str());
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
          violations.push_back(fs::relative(e.path(), kRoot).string() + ":" + std::to_string(n) + " includes " + target + "/, which " +
                               dir + "'s libraries do not link");
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

}  // namespace
}  // namespace cs
