// clustersim: predicts step time, speedup, exposed communication and memory of a parallel
// training layout by discrete-event simulation of its task graph. The command line is cli/app.cpp.
#include <iostream>
#include <string>
#include <vector>

#include "cli/app.h"

int main(int argc, char** argv) {
  return cs::cli::run_cli(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
