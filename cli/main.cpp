// clustersim: predicts step time, speedup, exposed communication and memory of a parallel
// training layout by discrete-event simulation of its task graph. The command line is cli/app.cpp.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli/app.h"

int main(int argc, char** argv) {
  int status =
      cs::cli::run_cli(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
  // What went to standard output (a report, an imported draft) redirected to a full disk is lost:
  // say so and fail, rather than exit 0 with half a file.
  errno = 0;
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0) {
    const int error = errno ? errno : EIO;
    std::cerr << "error: cannot write standard output: " << std::strerror(error) << "\n";
    if (status == 0) status = 1;
  }
  return status;
}
