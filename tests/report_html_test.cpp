// The HTML report (reports/html_report.h, simulate --html) is one self-contained file: nothing
// fetched from the network, three charts with their legends, and a script that runs without a
// console message in headless Chromium, which also writes a screenshot (skipped, saying why,
// where Chromium is missing or cannot start).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "driver/simulation.h"
#include "driver/simulation_report.h"
#include "test_paths.h"

namespace cs {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

std::string html_of(const std::string& scenario) {
  const auto s = scenario::load_scenario(cs::test_paths::source_dir() + "/scenarios/" + scenario);
  const driver::Platform platform(s);
  const auto r = driver::simulate(s, {.with_baseline = false}, &platform);
  std::ostringstream out;
  driver::write_report_html(out, r, &platform);
  return out.str();
}

TEST(HtmlReport, IsSelfContainedWithThreeChartsAndLegends) {
  const std::string html = html_of("gpt2-large-2xh100-ddp.yaml");
  EXPECT_EQ(count(html, "<svg"), 3u);   // per-rank split, timeline, memory
  EXPECT_EQ(count(html, "src="), 0u);   // no external script, image or frame
  EXPECT_EQ(count(html, "href="), 0u);  // no stylesheet or link
  EXPECT_EQ(count(html, "http"), 0u);   // no address at all
  for (const char* legend : {">compute<", ">exposed communication<", ">forward<", ">backward<",
                             ">activations<", ">optimizer_state<"}) {
    EXPECT_NE(html.find(legend), std::string::npos) << legend;
  }
  EXPECT_NE(html.find("capacity 79.65 GiB"), std::string::npos);  // the H100's usable memory line
  EXPECT_NE(html.find("step bound by compute"), std::string::npos);
  EXPECT_LT(html.size(), 400'000u);  // drawn at pixel resolution, not per task
}

TEST(HtmlReport, ShowsTheTrainingRunWithItsDefaultsMarked) {
  // The scenario has no `run:` block: every input is a default, named with its source (an H100:
  // DGX H100's 10.2 kW / 8 = 1275 W), and the goodput row is there (failures are expected).
  const std::string html = html_of("gpt2-large-2xh100-ddp.yaml");
  EXPECT_EQ(count(html, "<h2>The training run: time, cost and goodput under failures</h2>"), 1u);
  EXPECT_NE(html.find("1275 W per GPU (default: DGX H100 system max 10.2 kW / 8 GPUs)"),
            std::string::npos);
  EXPECT_NE(html.find("<tr><td>goodput</td>"), std::string::npos);
}

TEST(HtmlReport, OpensInHeadlessChromiumWithoutAConsoleMessage) {
  if (std::system("command -v chromium >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "chromium not installed (bash scripts/setup.sh installs it)";
  const fs::path dir = fs::temp_directory_path() / ("cs_html_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path page = dir / "report.html", dom = dir / "dom.txt", log = dir / "log.txt",
                 png = dir / "report.png";
  // A pipeline (PP 4, interleaved) on 64 GPUs in 8 nodes: every chart has something to show.
  std::ofstream(page) << html_of("llama2-70b-64xh100.yaml");
  const std::string chromium =
      "timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars "
      "--enable-logging=stderr --v=0 ";
  const int rc = std::system((chromium + "--dump-dom file://" + page.string() + " > " +
                              dom.string() + " 2> " + log.string())
                                 .c_str());
  if (rc != 0 || read(dom).empty()) {
    fs::remove_all(dir);
    GTEST_SKIP() << "chromium could not run headless here (exit " << rc << ")";
  }
  const std::string log_text = read(log);
  EXPECT_EQ(log_text.find(":CONSOLE"), std::string::npos) << log_text;  // any console message fails
  EXPECT_NE(read(dom).find("data-ready=\"yes\""), std::string::npos);   // the script ran to its end
  ASSERT_EQ(std::system((chromium + "--window-size=1040,2000 --screenshot=" + png.string() +
                         " file://" + page.string() + " > /dev/null 2>&1")
                            .c_str()),
            0);
  const std::string image = read(png);
  ASSERT_GT(image.size(), 20'000u);  // a blank page compresses to a few KB
  EXPECT_EQ(image.substr(1, 3), "PNG");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cs
