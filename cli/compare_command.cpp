// `clustersim compare`: flags into a workflows::CompareRequest (workflows/compare.h).
#include <memory>

#include "cli/options.h"
#include "workflows/compare.h"

namespace cs::cli {

CLI::Option* set_option(CLI::App& sub, std::vector<scenario::KeyOverride>& target,
                        const std::string& help) {
  return sub
      .add_option_function<std::vector<std::string>>(
          "--set",
          [&target](const std::vector<std::string>& given) {
            for (const auto& text : given) target.push_back(scenario::parse_override(text));
          },
          help)
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
}

void add_compare_command(CLI::App& app, Context& ctx) {
  struct Args : workflows::CompareRequest {
    std::vector<std::string> files;
  };
  auto a = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand(
      "compare",
      "two scenarios side by side (or one against itself with --set changes): step time, "
      "tokens/s, MFU, peak memory by category, exposed communication, bubble, bottleneck, and "
      "the scenario keys that differ");
  sub->add_option("A B", a->files, "the scenario files (YAML): A, and B unless --set makes it")
      ->type_name("FILE");
  set_option(*sub, a->set_b,
             "a dotted scenario key and its YAML value for B (repeatable), e.g. --set layout.tp=4; "
             "with one file, B is A with these changes");
  text_option(*sub, "--json", a->json, "write the comparison as JSON");
  text_option(*sub, "--html", a->html, "a self-contained HTML page of the comparison");
  text_option(*sub, "--profile", a->profile,
              "a calibrated profile instead of the GPU's shipped one, for both scenarios");
  sub->add_flag("--no-profile", a->no_profile,
                "datasheet figures even where the GPU has a shipped profile");
  sub->callback([a, sub, &ctx] {
    if (a->files.empty() || a->files.size() > 2)
      throw UserError("compare takes one or two scenario files\n" + sub->help());
    a->a_file = a->files[0];
    a->b_file = a->files.size() == 2 ? a->files[1] : std::string();
    workflows::compare(*a, ctx.out);
  });
}

}  // namespace cs::cli
